"""The module layers of STYLE.md: each core module imports only modules below it; consumers import public names.

Every import counts: at module level, under ``TYPE_CHECKING`` and inside functions.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hookreg"

# Bottom to top; modules on one line may not import each other unless listed in that order.
LAYERS: list[tuple[str, ...]] = [
    ("hookreg._errors",),
    ("hookreg._log",),
    ("hookreg._results",),
    ("hookreg._context",),
    ("hookreg._points",),
    ("hookreg._patterns",),
    ("hookreg._registration",),
    ("hookreg._rules",),
    ("hookreg._plan",),
    ("hookreg._registry",),
    ("hookreg._display",),
    ("hookreg._trace",),
    ("hookreg.policy",),
    ("hookreg._dispatch",),
    ("hookreg._surface",),
    ("hookreg._lifecycle",),
    ("hookreg._commands",),
    ("hookreg.external",),
    ("hookreg.otel",),
    ("hookreg",),
]
RANK = {module: rank for rank, layer in enumerate(LAYERS) for module in layer}


# What consumers may import: the public modules, hookreg._lifecycle, and their own package.
PUBLIC = {
    "hookreg",
    "hookreg.policy",
    "hookreg.external",
    "hookreg.otel",
    "hookreg.testing",
    "hookreg.harness",
    "hookreg._lifecycle",
}
CONSUMERS = ("hookreg.testing", "hookreg.harness", "hookreg.adapters", "hookreg.__main__")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (ROOT / relative).with_suffix(".py").exists() or (ROOT / relative / "__init__.py").exists()


def imports(path: Path) -> set[str]:
    """Every hookreg module `path` imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "hookreg"}
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            if node.module.split(".")[0] != "hookreg":
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if is_module(sub) else node.module)
    return found


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_has_a_place() -> None:
    """Each module of hookreg is a core module in the layer order or a consumer."""
    placed = {name for name in MODULES if name in RANK or name.startswith(CONSUMERS)}
    assert placed == set(MODULES)


@pytest.mark.parametrize("module", [name for name in MODULES if name in RANK])
def test_a_core_module_imports_only_modules_below_it(module: str) -> None:
    """A core module imports only core modules below it (TYPE_CHECKING and function-level imports too)."""
    upward = {
        imported
        for imported in imports(MODULES[module])
        if imported != module and (imported not in RANK or RANK[imported] >= RANK[module])
    }
    assert not upward, f"{module} imports {sorted(upward)}, which are not below it in STYLE.md's order"


def test_consumers_import_public_names() -> None:
    """testing, harness, adapters and the command line import public modules, hookreg._lifecycle and their own."""
    private = set()
    for module, path in MODULES.items():
        if not module.startswith(CONSUMERS):
            continue
        own = next(package for package in CONSUMERS if module.startswith(package))
        for imported in imports(path):
            if imported not in PUBLIC and not imported.startswith(own):
                private.add((module, imported))
    assert not private, f"consumers import private modules: {sorted(private)}"


def test_the_core_touches_no_other_module_s_private_state() -> None:
    """No core module imports an underscore name from another module (the private state of its owner)."""
    offenders = []
    for module, path in MODULES.items():
        if module not in RANK:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hookreg"):
                offenders += [
                    f"{module}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not is_module(f"{node.module}.{alias.name}")
                ]
    assert not offenders


@pytest.mark.parametrize("module", list(RANK))
def test_a_core_module_s_all_names_what_it_defines_at_run_time(module: str) -> None:
    """A name type checkers alone see (a TypeVar, a Protocol under ``TYPE_CHECKING``) stays out of ``__all__``."""
    loaded = importlib.import_module(module)
    assert [name for name in loaded.__all__ if not hasattr(loaded, name)] == []
