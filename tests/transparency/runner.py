"""Run a framework's own tests without hookreg, with an empty registry and with pass-through hooks, and compare.

``python tests/transparency/runner.py <module> [--subset] [tests…] [pytest options…]``, run by
``nox -s transparency`` in a venv holding the framework, its test requirements and hookreg. ``<module>`` names the
adapter (``openai_agents``); ``transparency_<module>.py`` beside this file declares:

- ``DIST``: the distribution whose tests run, at the release installed; its sdist comes from the package index into
  the git-ignored ``.cache/transparency/`` (``TESTS_FROM``: an environment variable naming a checkout instead, for a
  framework whose sdist ships no tests — without it, ``VENDORED``, a folder beside this file holding the ``SUBSET``
  files from such a checkout, is used when the spec names one; ``TESTS_IN_PACKAGE``: the import name of an installed
  package whose tests ship inside it, copied from there into the cache);
- ``TEST_REQUIREMENTS``: what those tests import beyond the framework (nox installs them);
- ``FILES``: the test files run (the agent loop, tools, streaming, approval, middleware), ``SUBSET``: those
  ``.ci/run`` runs, ``PYTEST_ARGS``: options the suite needs;
- ``KNOWN``: each test that still diverges, with its reason — the limits the adapter's docs page lists;
- ``inject(registry)``: attach hookreg to every agent the tests build.

A divergence is a test whose outcome with hookreg attached differs from its outcome without. Each one is run again
in every mode (a flaky test diverges once, not twice) before it counts. ``HOOKREG_TRANSPARENCY_VERBOSE=1`` shows
pytest's own output. The run fails on any divergence that
``KNOWN`` does not name, and on a ``KNOWN`` entry that no longer diverges (the docs page would be wrong).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache" / "transparency"
INDEX = "https://pypi.org/simple"
MODES = ("off", "empty", "hooked")
# A hang is a failure of that test, not of the run: pytest-timeout ends it and the next test runs.
TIMEOUT = 120

Outcomes = dict[str, str]


def framework(module: str) -> ModuleType:
    """The declarations of one framework (``transparency_<module>.py``)."""
    sys.path.insert(0, str(HERE))
    return importlib.import_module(f"transparency_{module}")


def sources(spec: ModuleType) -> Path:
    """The root of the framework's tests at the installed release: its sdist, unpacked once into the cache."""
    package: str | None = getattr(spec, "TESTS_IN_PACKAGE", None)
    if package is not None:
        return installed_tests(spec, package)
    checkout_variable: str | None = getattr(spec, "TESTS_FROM", None)
    if checkout_variable is not None:
        checkout = os.environ.get(checkout_variable)
        vendored: str | None = getattr(spec, "VENDORED", None)
        if not checkout and vendored is not None:
            return HERE / vendored
        if not checkout:
            msg = (
                f"Cannot find the tests of {spec.DIST}: its sdist ships none. Set {checkout_variable} to a checkout "
                f"of its repository at the release installed ({importlib.metadata.version(spec.DIST)})."
            )
            raise SystemExit(msg)
        return Path(checkout)
    version = importlib.metadata.version(spec.DIST)
    root = CACHE / f"{spec.DIST}-{version}"
    if root.is_dir():
        return root
    stem = f"{spec.DIST.replace('-', '_')}-{version}"
    request = urllib.request.Request(f"{INDEX}/{spec.DIST}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = json.load(answer)["files"]
    (sdist,) = (
        f for f in files if f["filename"].lower() in {f"{stem}.tar.gz".lower(), f"{spec.DIST}-{version}.tar.gz"}
    )
    with urllib.request.urlopen(sdist["url"], timeout=300) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != sdist["hashes"]["sha256"]:
        msg = f"Cannot use {sdist['filename']}: its sha256 differs from the package index's. Download it again."
        raise SystemExit(msg)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        archive = Path(scratch) / sdist["filename"]
        archive.write_bytes(data)
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        (unpacked,) = (p for p in Path(scratch).iterdir() if p.is_dir())
        unpacked.rename(root)
    return root


def installed_tests(spec: ModuleType, package: str) -> Path:
    """The tests the installed `package` ships (its ``*_test.py`` and ``test_*.py`` files), copied once into the cache.

    Copied under their import path below ``shipped-tests/`` (``shipped-tests/google/antigravity/agent_test.py``),
    beside a ``pytest.ini`` of their own, so that they run like an sdist's tests: pytest reads no configuration from
    the directories above (hookreg's pyproject.toml among them) and writes nothing into site-packages. The folder's
    name is no importable name, so the copies never shadow the installed package they test (``python -m pytest``
    puts the working directory first on ``sys.path``).
    """
    version = importlib.metadata.version(spec.DIST)
    root = CACHE / f"{spec.DIST}-{version}-installed"
    if root.is_dir():
        return root
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        msg = f"Cannot find the tests of {spec.DIST}: {package!r} is not an installed package. Install {spec.DIST}."
        raise SystemExit(msg)
    top = Path(next(iter(found.submodule_search_locations)))
    base = top.parents[package.count(".")]  # where the package's import path starts
    tests = sorted({*top.rglob("*_test.py"), *top.rglob("test_*.py")})
    if not tests:
        msg = f"Cannot find the tests of {spec.DIST}: {top} holds no test files. Set TESTS_FROM to a checkout instead."
        raise SystemExit(msg)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        copy = Path(scratch) / "tests"
        for test in tests:
            target = copy / "shipped-tests" / test.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(test, target)
        (copy / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        copy.rename(root)
    return root


@dataclass(frozen=True)
class Suite:
    """One framework's tests: its declarations, its adapter module, where its tests are, extra pytest options."""

    spec: ModuleType
    module: str
    root: Path
    extra: Sequence[str]


def run(suite: Suite, mode: str, tests: Sequence[str]) -> Outcomes:
    """Run `tests` in `mode` and return each test's outcome."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as handle:
        out = Path(handle.name)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "HOOKREG_TRANSPARENCY_FRAMEWORK": suite.module,
        "HOOKREG_TRANSPARENCY_MODE": mode,
        "HOOKREG_TRANSPARENCY_OUTCOMES": str(out),
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "hookreg_transparency",
        "-p",
        "no:cacheprovider",
        f"--timeout={TIMEOUT}",
        *suite.spec.PYTEST_ARGS,
        *suite.extra,
        *tests,
    ]
    subprocess.run(
        command,
        cwd=suite.root,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL if not os.environ.get("HOOKREG_TRANSPARENCY_VERBOSE") else None,
    )
    outcomes: Outcomes = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        outcomes[record["test"]] = record["outcome"]
    out.unlink()
    return outcomes


def divergences(runs: Mapping[str, Outcomes]) -> dict[str, dict[str, str]]:
    """Each test whose outcome in a hooked mode differs from ``off`` (or that one mode did not run)."""
    tests = set().union(*runs.values())
    found: dict[str, dict[str, str]] = {}
    for test in sorted(tests):
        seen = {mode: outcomes.get(test, "not run") for mode, outcomes in runs.items()}
        if len(set(seen.values())) > 1:
            found[test] = seen
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Compare the framework's tests across the three modes; 0 when no divergence is unexplained."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", help="the adapter module, e.g. openai_agents")
    parser.add_argument("--subset", action="store_true", help="run SUBSET (what .ci/run runs) instead of FILES")
    parser.add_argument("tests", nargs="*", help="test files or node ids to run instead of FILES")
    options, extra = parser.parse_known_args(argv)
    spec = framework(options.module)
    suite = Suite(spec, options.module, sources(spec), extra)
    tests = options.tests or list(spec.SUBSET if options.subset else spec.FILES)
    missing = [test for test in tests if not (suite.root / test.partition("::")[0]).exists()]
    if missing:
        msg = (
            f"Cannot run {', '.join(missing)}: {suite.root} does not hold them (the vendored copy holds SUBSET only). "
            f"Set {getattr(spec, 'TESTS_FROM', 'TESTS_FROM')} to a checkout of {spec.DIST}'s repository."
        )
        raise SystemExit(msg)
    runs = {mode: run(suite, mode, tests) for mode in MODES}
    if not all(runs.values()):
        msg = (
            f"Cannot compare {spec.DIST}'s tests: a mode ran none. "
            "HOOKREG_TRANSPARENCY_VERBOSE=1 shows pytest's output."
        )
        raise SystemExit(msg)
    found = divergences(runs)
    if found:  # run each diverging test again in every mode: a divergence counts when it repeats
        again = {mode: run(suite, mode, sorted(found)) for mode in MODES}
        found = {test: seen for test, seen in divergences(again).items() if test in found}
    version = importlib.metadata.version(spec.DIST)
    counts = {mode: sum(outcome == "passed" for outcome in runs[mode].values()) for mode in MODES}
    print(
        f"{spec.DIST} {version}: {len(runs['off'])} tests; passed " + ", ".join(f"{m} {n}" for m, n in counts.items())
    )
    known: Mapping[str, str] = spec.KNOWN
    unexplained = {test: seen for test, seen in found.items() if test not in known}
    stale = sorted(test for test in known if test not in found and test in runs["off"])  # only tests that ran
    for test, seen in found.items():
        label = "known" if test in known else "DIVERGES"
        print(f"  {label}: {test}: " + ", ".join(f"{mode} {outcome}" for mode, outcome in seen.items()))
        if test in known:
            print(f"    because {known[test]}")
    for test in stale:
        print(f"  STALE: {test} is listed in KNOWN but no longer diverges: remove it (and from the docs page)")
    print(f"  {len(found)} divergences, {len(unexplained)} unexplained, {len(stale)} stale")
    return 1 if unexplained or stale else 0


if __name__ == "__main__":
    sys.exit(main())
