"""The documentation: every Python block runs, the hook-point page is fresh, the site builds strictly."""

from __future__ import annotations

import ast
import doctest
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from adapter_extras import ADAPTERS
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
# Which reference page documents each public module (an anchor per public name).
REFERENCE = {
    "hookreg": "hookreg",
    "hookreg.policy": "policy",
    "hookreg.testing": "testing",
    "hookreg.testing.plugin": "testing",
    "hookreg.testing.conformance": "testing",
    "hookreg.harness": "harness",
    "hookreg.external": "external",
    "hookreg.otel": "otel",
    **{f"hookreg.adapters.{adapter.module}": "adapters" for adapter in ADAPTERS},
}

_SYBIL = Sybil(parsers=[PythonCodeBlockParser(), SkipParser()], path=str(ROOT))


def _generator() -> object:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module("generate_hook_points")
    finally:
        sys.path.remove(str(ROOT / "scripts"))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_code_blocks_run(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every Python block of the page runs, in order, in one namespace per page (unless marked to skip)."""
    document = _SYBIL.parse(page)
    document.namespace["__name__"] = f"docs_{page.stem.replace('-', '_')}"
    for example in document:
        example.evaluate()
    capsys.readouterr()


def test_every_python_block_is_collected() -> None:
    """Each ```python block of a page is one example the doc test runs; no Python hides under another fence name."""
    python_only = Sybil(parsers=[PythonCodeBlockParser()], path=str(ROOT))
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"^```(py|py3|python3|pycon)\s*$", text, re.MULTILINE), page
        assert len(list(python_only.parse(page))) == text.count("```python\n"), page


def test_getting_started_quickstart_is_the_example() -> None:
    """The Getting started page's first block is examples/quickstart.py, verbatim."""
    block = re.search(r"```python\n(.*?)```", (DOCS / "index.md").read_text(encoding="utf-8"), re.DOTALL)
    assert block is not None
    assert block.group(1) == (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")


def test_readme_links_point_at_files() -> None:
    """Every relative link of the README names a file or folder of the repository (GitHub renders them)."""
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert targets
    assert [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()] == []


def test_readme_says_what_the_dev_install_brings_and_how_long_the_tests_take() -> None:
    """The README's set-up section: the dev extra brings every framework and Jupyter; both test runs are timed."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Install and test")[1].split("\n## ")[0]
    assert "pytest                # the fast loop: under 2 minutes on a quiet 2-core machine" in section
    assert "pytest --slow --cov   # everything, as CI runs it: about 6 minutes there" in section
    for brought in ("every supported framework", "Jupyter", "`pytest -m slow`", "`nox -s slow`"):
        assert brought in section


def test_hook_points_page_is_generated_from_the_code() -> None:
    """docs/hook-points.md equals what scripts/generate_hook_points.py renders now (rerun it when this fails)."""
    render = _generator().render  # type: ignore[attr-defined]  # a script module, loaded by path
    assert (DOCS / "hook-points.md").read_text(encoding="utf-8") == render()


def test_point_count_in_prose_is_current() -> None:
    """The README and Getting started give the number of hook points there are."""
    from hookreg import HookPoint

    assert f"{len(HookPoint)} hook points" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"all {len(HookPoint)} of them" in (DOCS / "index.md").read_text(encoding="utf-8")


def test_hook_points_page_names_every_point() -> None:
    """The generated table has one row per HookPoint, its style and tool scope first; its decorator is its name."""
    from hookreg import HookPoint, HookRegistry

    text = (DOCS / "hook-points.md").read_text(encoding="utf-8")
    assert "**decorator** is its name in lower case" in text
    for point in HookPoint:
        tools = "✓" if point.is_tool_scoped else "—"
        assert f"| `{point.name}` | {point.style.value} | {tools} |" in text
        assert callable(getattr(HookRegistry(), point.name.lower()))


def test_adapter_pages_are_the_adapters() -> None:
    """docs/adapters holds one page per adapter, named for its extra."""
    assert sorted(page.stem for page in (DOCS / "adapters").glob("*.md")) == sorted(a.extra for a in ADAPTERS)


# Each adapter page and the README column of that framework (the page's title), with the test file whose
# run-contract `Framework` class (its `streams` and `limits`) the page's run-contract table must agree with.
ADAPTER_TESTS = {
    adapter.extra: (
        (DOCS / "adapters" / f"{adapter.extra}.md").read_text(encoding="utf-8").partition("\n")[0].removeprefix("# "),
        ROOT / "tests" / "adapters" / f"test_{adapter.module}.py",
    )
    for adapter in ADAPTERS
}
IN_PROGRESS = "…"  # a run-contract cell whose framework's tests do not run the kit yet


def _run_contract_framework(test_file: Path) -> tuple[bool, dict[str, str]] | None:
    """The (streams, limits) of the run-contract Framework class in `test_file`, or None when it has none."""
    for node in ast.walk(ast.parse(test_file.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ClassDef):
            continue
        values: dict[str, ast.expr] = {}
        for item in node.body:
            if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                values[item.targets[0].id] = item.value
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                values[item.target.id] = item.value
        if {"streams", "stop_raises", "limits"} <= values.keys():
            return bool(ast.literal_eval(values["streams"])), dict(ast.literal_eval(values["limits"]))
    return None


def _expected_cells(framework: tuple[bool, dict[str, str]] | None, scenario: str) -> tuple[str, str]:
    """The blocking and streamed cells a page must show for `scenario`."""
    if framework is None:
        return IN_PROGRESS, IN_PROGRESS
    streams, limits = framework
    blocking = "✗" if scenario in limits or f"{scenario}/blocking" in limits else "✓"
    streamed = "✗" if scenario in limits or f"{scenario}/streamed" in limits else "✓"
    return blocking, (streamed if streams else "—")


@pytest.mark.parametrize("page", sorted(ADAPTER_TESTS))
def test_adapter_pages_show_the_run_contract_results(page: str) -> None:
    """Each adapter page's run-contract table has a row per RUN_SCENARIOS entry, marked as its tests run it."""
    from hookreg.testing.conformance import RUN_SCENARIOS

    text = (DOCS / "adapters" / f"{page}.md").read_text(encoding="utf-8")
    framework = _run_contract_framework(ADAPTER_TESTS[page][1])
    shown = {name: cells for name, *cells in re.findall(r"^\| `(\w+)` \|.*\| (\S+) \| (\S+) \|$", text, re.MULTILINE)}
    wrong = {
        s.name: (shown.get(s.name), _expected_cells(framework, s.name))
        for s in RUN_SCENARIOS
        if tuple(shown.get(s.name, ())) != _expected_cells(framework, s.name)
    }
    fix = f"rows (shown, expected): set the cells of docs/adapters/{page}.md to what {ADAPTER_TESTS[page][1].name} runs"
    assert wrong == {}, fix
    if framework is None:
        assert "Run-contract kit: in progress" in " ".join(text.split())


def test_readme_run_contract_row_matches_the_adapter_tests() -> None:
    """The README's run-contract row says ✓ for a framework only when its tests run every row with no limits."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    header = re.search(r"^\| point \|(.*)\|$", readme, re.MULTILINE)
    row = re.search(r"^\| run-contract kit[^|]*\|(.*)\|$", readme, re.MULTILINE)
    assert header is not None
    assert row is not None
    cells = dict(
        zip([c.strip() for c in header.group(1).split("|")], [c.strip() for c in row.group(1).split("|")], strict=True)
    )
    for column, test_file in ADAPTER_TESTS.values():
        framework = _run_contract_framework(test_file)
        expected = "in progress" if framework is None else ("✓" if not framework[1] else "✓ (with limits)")
        assert cells[column] == expected, f"README run-contract row, {column}: write {expected!r} ({test_file.name})"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with ``mkdocs build --strict`` (a broken link, anchor or reference fails it)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


@pytest.mark.slow
def test_site_builds_strictly(site: Path) -> None:
    """mkdocs build --strict succeeds and writes every page of the navigation."""
    assert (site / "index.html").is_file()
    assert (site / "hook-points" / "index.html").is_file()
    assert (site / "changelog" / "index.html").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(REFERENCE))
def test_reference_documents_every_public_name(site: Path, module: str) -> None:
    """The API reference has an entry for every name in the module's __all__."""
    html = (site / "reference" / REFERENCE[module] / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([\w.]+)"', html))
    missing = [name for name in importlib.import_module(module).__all__ if f"{module}.{name}" not in anchors]
    assert missing == []


@pytest.mark.slow
def test_reference_documents_every_registry_method(site: Path) -> None:
    """HookRegistry's entry lists every public method, those it inherits included."""
    from hookreg import HookRegistry

    html = (site / "reference" / "hookreg" / "index.html").read_text(encoding="utf-8")
    public = [name for name in dir(HookRegistry) if not name.startswith("_")]
    assert [name for name in public if f'id="hookreg.HookRegistry.{name}"' not in html] == []


def _pages(site: Path) -> list[Path]:
    """The site's HTML pages (not the repository files it publishes under ``_repo/``)."""
    return [page for page in site.rglob("*.html") if "_repo" not in page.relative_to(site).parts]


@pytest.mark.slow
def test_example_sections_render_as_code(site: Path) -> None:
    """Every ``Example:`` section of a docstring renders as a code block, never as one run-on quoted paragraph."""
    for page in (site / "reference").glob("*/index.html"):
        html = page.read_text(encoding="utf-8")
        assert '<details class="example"' not in html, page
        assert "<blockquote>\n<blockquote>" not in html, page
    html = (site / "reference" / "hookreg" / "index.html").read_text(encoding="utf-8")
    start = html.index('id="hookreg.Registration.check_return"')
    example = html[html.index('doc-section-title">Examples:', start) :]
    assert example.index('<span class="gp">&gt;&gt;&gt; </span>') < example.index("</code></pre>")


@pytest.mark.slow
def test_no_page_cites_the_design_contract(site: Path) -> None:
    """Readers of the site do not have the design contract: no page says "DESIGN §"; each citation links a page."""
    assert [page for page in _pages(site) if "DESIGN" in page.read_text(encoding="utf-8")] == []
    otel = (site / "reference" / "otel" / "index.html").read_text(encoding="utf-8")
    assert '<a href="../../guides/otel/">the OpenTelemetry guide</a>' in otel


@pytest.mark.slow
def test_repository_paths_link_to_a_published_copy(site: Path) -> None:
    """A code span naming a repository file or folder is a link to its copy in the site, which exists."""
    plain = re.compile(r"(?<!\">)<code>((?:examples|benchmarks|tests|scripts)/[^<\s]*)</code>")
    linked = re.compile(r'<a href="([^"]*_repo/[^"]*)"><code>')
    for page in _pages(site):
        html = page.read_text(encoding="utf-8")
        assert plain.findall(html) == [], page
        for target in linked.findall(html):
            published = (page.parent / target).resolve()
            assert (published / "index.html" if target.endswith("/") else published).is_file(), (page, target)
    speed = (site / "guides" / "speed" / "index.html").read_text(encoding="utf-8")
    assert '<a href="../../_repo/benchmarks/RESULTS.md.txt"><code>benchmarks/RESULTS.md</code></a>' in speed
    listing = (site / "_repo" / "tests" / "external" / "claude_code" / "index.html").read_text(encoding="utf-8")
    assert '<a href="conftest.py.txt">conftest.py</a>' in listing


@pytest.mark.slow
def test_the_reference_has_no_empty_entries_and_starts_with_the_registry(site: Path) -> None:
    """No entry is a heading with nothing under it; hookreg's page opens on HookRegistry, callback types last."""
    empty = re.compile(r'class="doc doc-heading">(?:(?!<h\d).)*?<div class="doc doc-contents ">\s*</div>', re.DOTALL)
    for page in (site / "reference").glob("*/index.html"):
        assert empty.findall(page.read_text(encoding="utf-8")) == [], page
    html = (site / "reference" / "hookreg" / "index.html").read_text(encoding="utf-8")
    objects = re.findall(r'<h3 id="hookreg\.(\w+)" class="doc doc-heading">', html)
    assert objects[0] == "HookRegistry"
    import hookreg

    aliases = [name for name in objects if not isinstance(getattr(hookreg, name), type)]
    assert objects[-len(aliases) :] == aliases  # every callback type after every class
    assert "PreToolCallDecider" in aliases


@pytest.mark.slow
def test_pages_link_their_neighbours_and_the_reference_shows_its_source(site: Path) -> None:
    """Each page links the next one (the first has no previous); each reference entry shows its source."""
    first = (site / "index.html").read_text(encoding="utf-8")
    assert "md-footer__link--next" in first
    guide = (site / "guides" / "failures" / "index.html").read_text(encoding="utf-8")
    assert "md-footer__link--prev" in guide
    assert "md-footer__link--next" in guide
    reference = (site / "reference" / "hookreg" / "index.html").read_text(encoding="utf-8")
    assert "Source code in <code>hookreg/_surface.py</code>" in reference


@pytest.mark.slow
def test_the_hook_point_table_fits_its_page(site: Path) -> None:
    """The table gets the width of both sidebars, and its identifiers never break mid-word (CSS, as built)."""
    html = (site / "hook-points" / "index.html").read_text(encoding="utf-8")
    assert re.search(r'data-md-type="navigation" hidden>', html)
    assert re.search(r'data-md-type="toc" hidden>', html)
    assert '<link rel="stylesheet" href="../stylesheets/extra.css">' in html
    css = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    rule = css[css.index(".md-typeset table:not([class]) code {") :].split("}")[0]
    assert "word-break: normal;" in rule
    assert "overflow-wrap: normal;" in rule


# What the built page looks like in Chromium at 1280 px: how wide the table is next to the room it has, and every
# identifier (code without a space) that the browser laid out on more than one line.
_LAYOUT = """() => {
  const table = document.querySelector("article table");
  const wrap = table.closest(".md-typeset__scrollwrap") || table.parentElement;
  const broken = [...table.querySelectorAll("code")]
    .filter((code) => !/\\s/.test(code.textContent) && code.getClientRects().length > 1)
    .map((code) => code.textContent);
  return {scroll: wrap.scrollWidth, room: wrap.clientWidth, right: table.getBoundingClientRect().right,
          viewport: document.documentElement.clientWidth, broken: broken};
}"""


@pytest.mark.slow
def test_the_hook_point_table_fits_1280_px_in_a_browser(site: Path) -> None:
    """In a real browser at 1280 px the whole table is in view, no column pushed off, no identifier split."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "this test opens the site in Chromium: install it (Debian: apt-get install chromium)"
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=flags)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((site / "hook-points" / "index.html").as_uri())
            layout = page.evaluate(_LAYOUT)
        finally:
            browser.close()
    assert layout["scroll"] <= layout["room"], layout
    assert layout["right"] <= layout["viewport"], layout
    assert layout["broken"] == [], layout


MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "hookreg").rglob("*.py")
    if path.name != "__main__.py"
)


_BLOCK = re.compile(r"(<!-- skip: next -->\s*\n)?```python\n(.*?)```", re.DOTALL)


def _page_module(page: Path) -> str:
    """A page's Python blocks as one module, in order, as the doc test runs them (skipped blocks left out)."""
    text = page.read_text(encoding="utf-8")
    return "\n".join(block for skip, block in _BLOCK.findall(text) if not skip)


@pytest.mark.slow
def test_code_blocks_type_check(tmp_path: Path) -> None:
    """Every page's Python blocks, as one module per page, pass mypy --strict with the project's settings."""
    for page in PAGES:
        source = _page_module(page)
        if source:
            name = "_".join(page.relative_to(ROOT).with_suffix("").parts).replace("-", "_").replace(".", "_")
            (tmp_path / f"doc_{name}.py").write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("module", MODULES)
def test_every_docstring_example_runs(module: str) -> None:
    """Each ``Example:`` in a docstring runs and prints what it shows (doctest, ``...`` matching anything)."""
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed in {module}"
