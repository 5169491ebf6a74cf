"""A new hook point is one row in the per-point table (and its context class): everything else reads that row."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hookreg import HookPoint, HookStyle, RequestPatch
from hookreg._points import POINTS

ROOT = Path(__file__).resolve().parent.parent

# The modules that hold per-point behaviour: none may name a point, only read the row it is given.
# (resolve_tool_call in hookreg/_dispatch.py names the three points it chains, by design: it is that chain.)
READERS = ["_rules.py", "_plan.py", "_registry.py", "_registration.py", "_display.py", "testing/_helpers.py"]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_surface", ROOT / "scripts" / "generate_surface.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate_surface", module)
    spec.loader.exec_module(module)
    return module


def test_the_table_has_one_row_per_point() -> None:
    """Every HookPoint member has exactly one row, and the row is about that point."""
    assert list(POINTS) == list(HookPoint)
    assert all(spec.point is point for point, spec in POINTS.items())


@pytest.mark.parametrize("point", list(HookPoint))
def test_the_point_s_own_facts_are_its_row(point: HookPoint) -> None:
    """HookPoint's style, context and tool scope are read from the row; the tool scope from the context's fields."""
    spec = POINTS[point]
    assert (point.style, point.context, point.is_tool_scoped) == (spec.style, spec.context, spec.is_tool_scoped)
    assert spec.is_tool_scoped == any(f.name == "tool_name" for f in dataclasses.fields(spec.context))


@pytest.mark.parametrize("point", [p for p in HookPoint if p.style is HookStyle.TRANSFORM])
def test_a_transform_s_subject_is_declared_by_its_context(point: HookPoint) -> None:
    """A transform row's subject is the field its context class declares, so the row needs no subject column."""
    spec = POINTS[point]
    assert spec.subject in {f.name for f in dataclasses.fields(spec.context)}


@pytest.mark.parametrize("point", list(HookPoint))
def test_the_generated_code_reads_the_row(point: HookPoint) -> None:
    """The surface and make_context's overloads are written from the row: its alias, context, returns and style."""
    spec = POINTS[point]
    gen = generator()
    surface, contexts = gen.generate(), gen.generate_contexts()
    assert f"def {point.value}(self, fn: _{spec.alias}T | None = None" in surface
    assert f"{spec.alias}: TypeAlias = Callable[[{spec.context.__name__}]" in surface
    assert f"Literal[HookPoint.{point.name}], ctx: {spec.context.__name__}, /) -> {spec.gives}" in surface
    assert f"def {spec.style.method}(self, point: Literal[HookPoint.{point.name}]" in surface
    assert f"Literal[HookPoint.{point.name}], /, **fields: object) -> {spec.context.__name__}" in contexts


@pytest.mark.parametrize("module", READERS)
def test_no_module_but_the_table_names_a_point(module: str) -> None:
    """The rules, plans, registry, display and test helpers name no HookPoint member: per-point facts are rows."""
    tree = ast.parse((ROOT / "hookreg" / module).read_text())
    named = [
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "HookPoint"
        and node.attr.isupper()
    ]
    assert not named


def test_the_generator_names_no_point() -> None:
    """The surface generator keeps no table of its own: it names no point and no context class."""
    source = (ROOT / "scripts" / "generate_surface.py").read_text()
    assert not [point.name for point in HookPoint if f'"{point.name}"' in source]
    assert not [spec.context.__name__ for spec in POINTS.values() if f'"{spec.context.__name__}"' in source]


@pytest.mark.parametrize("point", list(HookPoint))
def test_a_row_accepts_its_returns_and_refuses_others(point: HookPoint) -> None:
    """A row accepts ``None`` where its point passes or keeps with it, its own return type, and nothing else."""
    spec = POINTS[point]
    assert spec.accepts(None) is (spec.optional or spec.style is HookStyle.OBSERVE)
    assert not spec.accepts(1)
    assert repr(spec) == f"<PointSpec {point.value}: {spec.style}, {spec.context.__name__}>"
    if spec.returns is not None:
        kind = dict if spec.returns.__name__ == "Mapping" else spec.returns
        sample = kind() if kind in (dict, str) else spec.passed if spec.passed is not None else spec.all_passed
        if kind is RequestPatch:
            sample = RequestPatch()
        assert spec.accepts(sample)
