"""How a registry shows: _repr_html_ in a notebook and describe() as text; the notebook tour example."""

from __future__ import annotations

import asyncio
import functools
import re
import runpy
from collections.abc import Callable
from pathlib import Path

import pytest

from hookreg import HookPoint, HookRegistry, HookResult, PreToolCallDecideContext
from hookreg._registration import short_name

ROOT = Path(__file__).resolve().parent.parent


def allow(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


async def slow_allow(ctx: PreToolCallDecideContext) -> HookResult:
    await asyncio.sleep(0)
    return HookResult.allow()


def build() -> HookRegistry:
    """A registry with a priority, tools=, an async hook with a timeout, and an included registry."""
    registry, shared = HookRegistry(), HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, allow, name="late")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, allow, name="first", priority=5, tools=["bash", "sh_*"])
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, slow_allow, name="<slow>", timeout=2.5, on_error="ignore")
    shared.register(HookPoint.PRE_TOOL_CALL_DECIDE, allow, name="shared")
    shared.register(HookPoint.NOTIFICATION, lambda ctx: None, name="note")
    registry.include(shared, priority=1)
    return registry


def test_describe_lists_points_and_hooks_in_dispatch_order() -> None:
    """describe() is a heading plus one line per hook: points in order, hooks by priority, includes flattened."""
    lines = build().describe().splitlines()
    assert lines[0] == "HookRegistry(pre_tool_call_decide=4, notification=1)"
    assert lines[1].split() == ["point", "hook", "priority", "tools", "kind", "on_error"]
    rows = [line.split("  ") for line in lines[2:]]
    cells = [[cell.strip() for cell in row if cell.strip()] for row in rows]
    assert cells == [
        ["pre_tool_call_decide", "first", "5", "bash, sh_*", "sync", "deny"],
        ["shared", "0", "all", "sync, included at 1", "deny"],
        ["late", "0", "all", "sync", "deny"],
        ["<slow>", "0", "all", "async (2.5s)", "ignore"],
        ["notification", "note", "0", "all", "sync, included at 1", "ignore"],
    ]


def test_describe_of_an_empty_registry_says_so() -> None:
    """An empty registry describes itself in one line, as text and in a notebook."""
    assert HookRegistry().describe() == "HookRegistry(): no hooks"
    assert HookRegistry()._repr_html_() == "<p>HookRegistry(): no hooks</p>"


def make_hooks() -> tuple[Callable[[PreToolCallDecideContext], HookResult], ...]:
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    class Checks:
        def method(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

    return gate, Checks().method, functools.partial(lambda ctx, _: HookResult.allow(), _=1)


def test_hooks_defined_in_functions_show_without_locals() -> None:
    """Default names of nested functions, methods of nested classes and partials show without the <locals> path."""
    registry = HookRegistry()
    for hook in make_hooks():
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, hook)
    names = [line.split()[-5] for line in registry.describe().splitlines()[2:]]
    assert names == ["gate", "Checks.method", "partial(<lambda>)"]
    assert "&lt;locals&gt;" not in registry._repr_html_()
    assert [reg.name for reg in registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE)] == [
        "make_hooks.<locals>.gate",
        "make_hooks.<locals>.Checks.method",
        "partial(make_hooks.<locals>.<lambda>)",
    ]


def test_short_name_keeps_names_without_locals() -> None:
    """Names with no <locals> part, and nested <locals> parts, come out as expected."""
    assert short_name("module_level") == "module_level"
    assert short_name("<lambda>") == "<lambda>"
    assert short_name("a.<locals>.B.<locals>.c") == "c"
    assert short_name("partial(a.<locals>.gate)") == "partial(gate)"


def test_repr_html_is_the_same_table_escaped() -> None:
    """_repr_html_ holds the describe() rows in HTML, names escaped, with the repr as caption."""
    page = build()._repr_html_()
    assert page.startswith("<table><caption>HookRegistry(pre_tool_call_decide=4, notification=1)</caption>")
    assert page.count("<tr>") == 6  # header and five hooks
    assert "<th>on_error</th>" in page
    assert "<td>&lt;slow&gt;</td><td>0</td><td>all</td><td>async (2.5s)</td><td>ignore</td>" in page
    assert "<slow>" not in page
    assert page.index(">first<") < page.index(">shared<") < page.index(">late<") < page.index(">note<")


def test_the_display_follows_changes() -> None:
    """Registering and removing hooks shows at once in both displays."""
    registry = HookRegistry()
    handle = registry.register(HookPoint.STOP, lambda ctx: HookResult.allow(), name="stopper")
    assert "stopper" in registry.describe()
    assert "stopper" in registry._repr_html_()
    handle.remove()
    assert "stopper" not in registry._repr_html_()


def test_the_notebook_tour_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/notebook_tour.py runs and prints the registry table and a trace naming the decider."""
    runpy.run_path(str(ROOT / "examples" / "notebook_tour.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "pre_tool_call_decide  budget       10" in out
    assert "* decided the dispatch" in out
    assert "pre_tool_call_decide: deny, decided by no_rm" in out
    assert "hooks called: budget, no_rm" in out


def test_a_loaded_claude_code_config_shows_its_matchers_and_that_it_is_dual_path() -> None:
    """Config hooks pick their calls themselves: the tools column shows each event's matchers, the kind both paths."""
    from hookreg.external import load_hooks_config

    def group(matcher: str | None) -> dict[str, object]:
        return {"matcher": matcher, "hooks": [{"type": "command", "command": "exit 0"}]}

    config = {
        "hooks": {
            "PreToolUse": [group("Bash"), group("Edit|Write"), group("Bash")],
            "PostToolUse": [group("Read"), group("*")],
            "Stop": [group(None)],
        }
    }
    registry = HookRegistry()
    load_hooks_config(registry, config)
    rows = [re.split(r"\s{2,}", line.strip(" *")) for line in registry.describe().splitlines()[2:]]
    shown = {row[-5]: (row[-3], row[-2]) for row in rows}
    dual = "sync + async, included at 0"
    assert shown["claude:PreToolUse"] == ("matchers Bash, Edit|Write", dual)
    assert shown["claude:PostToolUse"] == ("all", dual)  # one of its matchers is "*"
    assert shown["claude:Stop"] == ("all", dual)
    assert "<td>matchers Bash, Edit|Write</td><td>sync + async, included at 0</td>" in registry._repr_html_()


def test_a_dual_path_hook_of_its_own_shows_both_paths() -> None:
    """Any object with a sync ``__call__`` and an ``async def acall`` is shown as one hook with two paths."""

    class Both:
        def __call__(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

        async def acall(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, Both(), name="both", timeout=3)
    assert registry.describe().splitlines()[2].split("  ")[-2:] == ["sync + async (3s)", "deny"]


def test_a_loaded_recursive_config_shows_each_entrys_matcher() -> None:
    """Recursive's per-entry matchers show as written; an entry without one runs for every call."""
    from hookreg.external import load_hooks_config

    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"matcher": "Bash(git *)", "command": "true"}]})
    load_hooks_config(registry, {"PostToolCall": [{"matcher": "Bash", "command": "true"}, {"command": "true"}]})
    rows = [re.split(r"\s{2,}", line.strip(" *")) for line in registry.describe().splitlines()[2:]]
    shown = {row[-5]: row[-3] for row in rows}
    assert shown == {"recursive:PreToolCall": "matcher Bash(git *)", "recursive:PostToolCall": "all"}
