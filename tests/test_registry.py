"""Registration, handles, replacement, inclusion and introspection (DESIGN §4)."""

from __future__ import annotations

import functools
import gc
import logging
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Final

import pytest
from structlog.testing import capture_logs

from hookreg import (
    DuplicateHookWarning,
    HookPoint,
    HookRegistry,
    HookResult,
    HookSignatureError,
    HookTypeError,
    HookValueError,
    IncludeError,
    PostToolCallContext,
    PreToolCallDecideContext,
    Registration,
)
from hookreg._registry import listens

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE


def call(tool: str = "bash", **args: object) -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name=tool, args=args, call_id="c1")


def allow(_: object) -> HookResult:
    return HookResult.allow()


def observe(_: object) -> None:
    return None


def recorder(log: list[str], name: str, result: HookResult | None = None) -> Callable[[object], HookResult]:
    def hook(ctx: object) -> HookResult:
        log.append(name)
        return result or HookResult.allow()

    hook.__qualname__ = name
    return hook


def names(registry: HookRegistry, point: HookPoint = GATE) -> list[str]:
    return [reg.name for reg in registry.callbacks(point)]


def test_decorator_bare_and_with_options_return_the_function() -> None:
    """Decorators work bare and with options, and hand back the very function."""
    registry = HookRegistry()

    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    assert registry.pre_tool_call_decide(gate) is gate
    assert registry.pre_tool_call_decide(name="named", priority=5, tools="bash")(gate) is gate
    first, second = registry.callbacks(GATE)
    assert (first.name, first.priority, first.tools, first.on_error) == ("named", 5, ("bash",), "deny")
    assert second.name.endswith("gate")


def test_register_accepts_value_strings_and_returns_a_handle() -> None:
    """register() takes a point or its value string; the handle describes the hook."""
    registry = HookRegistry()
    reg = registry.register("pre_tool_call_decide", allow, name="a", priority=2)
    assert (reg.point, reg.name, reg.callback, reg.priority, reg.tools, reg.timeout, reg.is_async) == (
        GATE,
        "a",
        allow,
        2,
        None,
        None,
        False,
    )
    assert registry.has_hooks(GATE)
    assert registry.has_hooks("pre_tool_call_decide")
    assert reg.remove() is True
    assert reg.remove() is False
    assert not registry.has_hooks(GATE)


def test_default_policy_comes_from_the_style() -> None:
    """on_error defaults: deny for deciders, raise for transforms, ignore for observers."""
    registry = HookRegistry()
    assert registry.register(GATE, allow).on_error == "deny"
    assert registry.register(HookPoint.MODEL_SELECT, lambda ctx: None).on_error == "raise"
    assert registry.register(HookPoint.POST_TURN, lambda ctx: None).on_error == "ignore"


def test_registration_is_read_only() -> None:
    """A Registration's options cannot be changed in place."""
    reg = HookRegistry().register(GATE, allow)
    with pytest.raises(AttributeError, match="read-only"):
        reg.priority = 3


def test_handle_as_context_manager() -> None:
    """A registration used with `with` is removed on exit."""
    registry = HookRegistry()
    with registry.register(GATE, allow) as reg:
        assert registry.callbacks(GATE) == (reg,)
    assert registry.callbacks(GATE) == ()
    assert reg.remove() is False


def test_priority_then_registration_order() -> None:
    """Higher priority runs first; equal priorities keep registration order."""
    registry = HookRegistry()
    log: list[str] = []
    for name, priority in [("a", 0), ("b", 10), ("c", 0), ("d", 10), ("e", -1)]:
        registry.register(GATE, recorder(log, name), name=name, priority=priority)
    registry.decide(GATE, call())
    assert log == ["b", "d", "a", "c", "e"]
    assert names(registry) == log


def test_replacement_by_explicit_name_keeps_place() -> None:
    """An explicit existing name replaces the earliest hook in place and logs hook_replaced."""
    registry = HookRegistry()
    log: list[str] = []
    registry.register(GATE, recorder(log, "a"), name="a")
    old = registry.register(GATE, recorder(log, "b"), name="b")
    registry.register(GATE, recorder(log, "c"), name="c")
    with capture_logs() as logs:
        new = registry.register(GATE, recorder(log, "b2"), name="b")
    assert logs == [{"event": "hook_replaced", "point": "pre_tool_call_decide", "hook": "b", "log_level": "info"}]
    registry.decide(GATE, call())
    assert log == ["a", "b2", "c"]
    assert old.remove() is False
    assert new.remove() is True


def test_replacement_applies_new_priority() -> None:
    """A replacement takes its own priority, keeping the old position among equals."""
    registry = HookRegistry()
    registry.register(GATE, allow, name="a")
    registry.register(GATE, allow, name="b")
    registry.register(GATE, allow, name="a", priority=-1)
    assert names(registry) == ["b", "a"]


def test_replacement_targets_defaulted_names_too() -> None:
    """name= replaces a hook whose name was defaulted from its function."""
    registry = HookRegistry()
    registry.register(GATE, allow)
    registry.register(GATE, lambda ctx: HookResult.deny("x"), name=allow.__qualname__)
    assert len(registry) == 1
    assert registry.decide(GATE, call()).reason == "x"


def test_duplicate_plain_function_warns_but_registers() -> None:
    """Re-registering the same plain function without name= warns and still registers."""
    registry = HookRegistry()
    registry.register(GATE, allow)
    with pytest.warns(DuplicateHookWarning, match="name="):
        registry.register(GATE, allow)
    assert len(registry) == 2


def cell(source: str, module: str = "__main__") -> dict[str, Any]:
    """Run `source` as a notebook cell does: at module level, in a fresh namespace named `module`."""
    namespace: dict[str, Any] = {"__name__": module, "HookResult": HookResult}
    exec(source, namespace)
    return namespace


GATE_CELL: Final = "def gate(ctx):\n    return HookResult.deny({reason!r})\n"


def test_rerun_cell_replaces_an_edited_function_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module-level function redefined by an edited, re-run cell replaces its predecessor as name= would."""
    events: list[tuple[str, str, dict[str, object]]] = []
    monkeypatch.setattr("hookreg._registry.log", lambda level, event, **fields: events.append((level, event, fields)))
    registry = HookRegistry()
    registry.register(GATE, allow, name="first")
    old = registry.register(GATE, cell(GATE_CELL.format(reason="old"))["gate"])
    registry.register(GATE, allow, name="last")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no DuplicateHookWarning: this is a replacement
        new = registry.register(GATE, cell(GATE_CELL.format(reason="new"))["gate"])
    assert names(registry) == ["first", "gate", "last"]
    assert registry.decide(GATE, call()).reason == "new"
    assert events == [("info", "hook_replaced", {"point": "pre_tool_call_decide", "hook": "gate"})]
    assert old.remove() is False
    assert new.remove() is True
    assert names(registry) == ["first", "last"]


def test_rerun_cell_replaces_an_unchanged_function_and_applies_its_priority() -> None:
    """Re-running an unchanged cell leaves one hook, with the priority the re-run gave it."""
    registry = HookRegistry()
    registry.register(GATE, cell(GATE_CELL.format(reason="same"))["gate"])
    registry.register(GATE, allow, name="other")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry.register(GATE, cell(GATE_CELL.format(reason="same"))["gate"], priority=-1)
    assert names(registry) == ["other", "gate"]
    assert [r.priority for r in registry.callbacks(GATE)] == [0, -1]


def test_rerun_decorated_cell_replaces_through_every_decorator_form() -> None:
    """A re-run cell that decorates (bare or with options) replaces as register() does, at that point only."""
    registry = HookRegistry()
    source = "@registry.pre_tool_call_decide\ndef gate(ctx):\n    return HookResult.deny({reason!r})\n"
    options = "@registry.pre_tool_call_decide(priority=5)\ndef gate(ctx):\n    return HookResult.deny('3')\n"
    for text in (source.format(reason="1"), source.format(reason="2"), options):
        namespace = {"__name__": "__main__", "HookResult": HookResult, "registry": registry}
        exec(text, namespace)
    registry.register(HookPoint.STOP, cell(GATE_CELL.format(reason="stop"))["gate"])
    assert len(registry) == 2
    assert registry.callbacks(GATE)[0].priority == 5
    assert registry.decide(GATE, call()).reason == "3"


def test_rerun_replacement_needs_the_same_module_and_qualified_name() -> None:
    """Functions of another module or another qualified name are other hooks; so are other registries' hooks."""
    registry = HookRegistry()
    inner = HookRegistry()
    inner.register(GATE, cell(GATE_CELL.format(reason="inner"))["gate"])
    registry.include(inner)
    registry.register(GATE, cell(GATE_CELL.format(reason="a"))["gate"])
    registry.register(GATE, cell(GATE_CELL.format(reason="b"), module="other_module")["gate"])
    registry.register(GATE, cell("def gate2(ctx):\n    return None\n")["gate2"])
    nameless: dict[str, Any] = {}
    exec(GATE_CELL.format(reason="c"), {"HookResult": HookResult}, nameless)  # no __name__: __module__ is None
    registry.register(GATE, nameless["gate"])
    exec(GATE_CELL.format(reason="d"), {"HookResult": HookResult}, nameless)
    registry.register(GATE, nameless["gate"])
    assert len(registry) == 6
    assert len(inner) == 1


def test_closures_partials_and_bound_methods_never_replace_implicitly() -> None:
    """Only a plain module-level function replaces implicitly: a factory, a wrapper, a partial make new hooks."""
    source = """
import functools

def factory():
    def made(ctx):
        return None
    return made

def wraps(fn):
    @functools.wraps(fn)
    def wrapper(ctx):
        return fn(ctx)
    return wrapper

@wraps
def wrapped(ctx):
    return None

def plain(ctx, extra=None):
    return None

class Gate:
    def check(self, ctx):
        return None

partial = functools.partial(plain, extra=1)
bound = Gate().check
"""
    registry = HookRegistry()
    kinds = ["wrapped", "partial", "bound"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            namespace = cell(source)
            for kind in kinds:
                registry.register(GATE, namespace[kind])
            registry.register(GATE, namespace["factory"]())
            registry.register(GATE, namespace["factory"]())
    assert len(registry) == 2 * (len(kinds) + 2)


LAMBDA_CELL: Final = "registry.register(GATE, lambda ctx: None)\nregistry.register(GATE, lambda ctx: 1)\n"


def test_a_rerun_cell_registering_a_lambda_warns_once_per_lambda_and_keeps_both() -> None:
    """A cell registering lambdas, run again, stacks a second hook per lambda: each one warns, suggesting name=."""
    registry = HookRegistry()
    namespace = {"registry": registry, "GATE": GATE}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(LAMBDA_CELL, {**namespace, "__name__": "__main__"})  # first run: nothing to warn about
    with pytest.warns(DuplicateHookWarning) as caught:
        exec(LAMBDA_CELL, {**namespace, "__name__": "__main__"})
    assert [str(w.message) for w in caught] == [
        f"A lambda defined at the same place (line {line}) is already registered at pre_tool_call_decide as "
        "'<lambda>': re-running its cell registers a second hook. Pass name= (the same on every run) to replace "
        "it instead, or a distinct name= to keep both."
        for line in (1, 2)
    ]
    assert {w.filename for w in caught} == {"<string>"}  # the warning points at the cell's line
    assert len(registry) == 4


def test_lambdas_from_one_code_object_or_another_module_never_warn() -> None:
    """A loop or a factory makes many lambdas from one code object; a lambda elsewhere is another place."""
    registry = HookRegistry()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            registry.register(GATE, lambda ctx: None)
        exec(LAMBDA_CELL, {"registry": registry, "GATE": GATE, "__name__": "__main__"})
        exec(LAMBDA_CELL, {"registry": registry, "GATE": GATE, "__name__": "other_module"})
        registry.register(HookPoint.POST_TURN, lambda ctx: None)
    assert len(registry) == 8


def test_the_same_callable_again_registers_twice_and_warns_at_the_caller() -> None:
    """The very same function, bound method or object registered again runs twice, with a warning naming name=."""

    class Loud:
        def __call__(self, ctx: object) -> None:
            return None

        def __eq__(self, other: object) -> bool:
            return True  # identity decides: a hostile __eq__ matches nothing

        __hash__ = object.__hash__

        def check(self, ctx: object) -> None:
            return None

    registry = HookRegistry()
    loud = Loud()
    registry.post_tool_call(loud)
    registry.register(HookPoint.POST_TOOL_CALL, loud.check)
    registry.post_tool_call(observe)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry.post_tool_call(loud)
        registry.register(HookPoint.POST_TOOL_CALL, loud.check)  # a new bound method of the same object
        registry.post_tool_call(priority=1)(observe)
    assert [w.category for w in caught] == [DuplicateHookWarning] * 3
    assert [w.filename for w in caught] == [__file__] * 3
    originals = [reg.name for reg in registry.callbacks(HookPoint.POST_TOOL_CALL) if reg.priority == 0][:3]
    assert [str(w.message) for w in caught] == [
        f"{name!r} is already registered at post_tool_call; registering the same callable again runs it twice. "
        f"Pass name={name!r} to replace it instead, or a distinct name= to keep both."
        for name in originals
    ]
    assert len(registry.callbacks(HookPoint.POST_TOOL_CALL)) == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # other objects, equal or not, are other hooks: silently
        registry.post_tool_call(Loud())
        registry.register(HookPoint.POST_TOOL_CALL, Loud().check)
    assert len(registry.callbacks(HookPoint.POST_TOOL_CALL)) == 8


@pytest.mark.parametrize("name", ["", " ", "\t\n"])
def test_empty_or_blank_name_is_refused(name: str) -> None:
    """An empty or blank name= is a HookValueError naming the option, the hook and the point."""
    registry = HookRegistry()
    with pytest.raises(HookValueError, match=r"register 'allow' at pre_tool_call_decide: name=.* is empty or blank"):
        registry.register(GATE, allow, name=name)
    with pytest.raises(ValueError, match="name="):
        registry.pre_tool_call_decide(name=name)(allow)
    assert len(registry) == 0


def test_closures_and_named_duplicates_never_warn() -> None:
    """Closures are distinct hooks, and an explicit name replaces instead of warning."""
    registry = HookRegistry()
    for _ in range(2):
        registry.register(GATE, recorder([], "same"))
    registry.register(GATE, allow, name="x")
    registry.register(GATE, allow, name="x")
    assert len(registry) == 3


def test_unregister_by_name_callable_and_bound_method() -> None:
    """unregister matches names or callables by ==, so bound methods work; it counts removals."""

    class Gate:
        def check(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

    gate = Gate()
    registry = HookRegistry()
    registry.register(GATE, gate.check)
    registry.register(GATE, allow, name="named")
    registry.register(HookPoint.PRE_TURN, allow, name="named")
    assert registry.unregister(gate.check) == 1
    assert registry.unregister("named", point=GATE) == 1
    assert registry.unregister("named") == 1
    assert registry.unregister("missing") == 0
    assert len(registry) == 0


def test_unregister_and_clear_touch_only_own_hooks() -> None:
    """unregister and clear(point) leave included registries alone; clear() also drops inclusions."""
    inner = HookRegistry()
    inner.register(GATE, allow, name="inner")
    outer = HookRegistry()
    outer.register(GATE, allow, name="outer")
    inclusion = outer.include(inner)
    assert outer.unregister("inner") == 0
    outer.clear(GATE)
    assert names(outer) == ["inner"]
    outer.register(GATE, allow, name="outer")
    outer.clear()
    assert len(outer) == 0
    assert inclusion.remove() is False
    assert names(inner) == ["inner"]


def test_clear_makes_handles_stale() -> None:
    """A cleared hook's handle reports it already gone."""
    registry = HookRegistry()
    reg = registry.register(GATE, allow)
    registry.clear()
    assert reg.remove() is False


def test_tools_filter_exact_and_globs() -> None:
    """tools= takes exact names or case-sensitive globs; a bare string is one pattern."""
    registry = HookRegistry()
    log: list[str] = []
    registry.register(GATE, recorder(log, "shell"), tools=["bash", "shell_*"])
    registry.register(GATE, recorder(log, "one"), tools="read_file")
    for tool in ["bash", "shell_run", "Shell_run", "read_file", "read_files", "ls"]:
        registry.decide(GATE, call(tool))
    assert log == ["shell", "shell", "one"]


def test_filtered_out_hooks_do_not_count_as_run() -> None:
    """on_interaction denies when its only hook is filtered out: nobody approved."""
    from hookreg import OnInteractionContext

    registry = HookRegistry()
    registry.register(HookPoint.ON_INTERACTION, allow, tools="bash")
    for tool in ["ls", None]:
        ctx = OnInteractionContext(question="ok?", options=["yes", "no"], tool_name=tool)
        assert registry.decide(HookPoint.ON_INTERACTION, ctx).reason == "no interaction hook"
    ctx = OnInteractionContext(question="ok?", options=[], tool_name="bash")
    assert registry.decide(HookPoint.ON_INTERACTION, ctx).allowed


@pytest.mark.parametrize("tools", [{"bash": True}, {"bash": "allow", "ls": "deny"}])
def test_a_mapping_for_tools_is_refused_rather_than_read_as_its_keys(tools: dict[str, object]) -> None:
    """tools={"bash": True} is refused when registered, naming the hook: its values would be silently dropped."""
    registry = HookRegistry()
    with pytest.raises(
        HookTypeError, match=r"Cannot register .*allow.* at pre_tool_call_decide: tools= must be"
    ) as raised:
        registry.register(GATE, allow, tools=tools)  # a dict is an Iterable[str] to a type checker
    assert "not a mapping (dict)" in str(raised.value)
    assert raised.value.point is GATE
    assert raised.value.callback is allow
    assert not registry.has_hooks(GATE)


def test_new_registries_stay_apart_in_hooks_inclusions_and_traces() -> None:
    """What one new registry gains (a hook, an inclusion, a trace) no other new registry sees, then or after."""
    first, second, third = HookRegistry(), HookRegistry(), HookRegistry()
    log: list[str] = []
    handle = first.register(GATE, recorder(log, "first"))
    assert second.decide(GATE, call()) is HookResult.allow()
    assert not second.has_hooks(GATE)
    assert log == []
    with second.trace() as trace:
        first.decide(GATE, call())
        third.decide(GATE, call())
        second.decide(GATE, call())
    assert [record.hooks for record in trace] == [()]
    third.include(first)
    assert third.has_hooks(GATE)
    assert not second.has_hooks(GATE)
    handle.remove()
    assert not first.has_hooks(GATE)
    assert not third.has_hooks(GATE)
    assert first.decide(GATE, call()) is HookResult.allow()
    assert log == ["first"]


def test_include_runs_at_its_position_and_priority() -> None:
    """An included registry's hooks run at the inclusion's place, in its own order."""
    log: list[str] = []
    policy = HookRegistry()
    policy.register(GATE, recorder(log, "p1"), name="p1")
    policy.register(GATE, recorder(log, "p0"), name="p0", priority=9)
    app = HookRegistry()
    app.register(GATE, recorder(log, "a"), name="a")
    app.include(policy)
    app.register(GATE, recorder(log, "b"), name="b")
    app.register(GATE, recorder(log, "first"), name="first", priority=1)
    app.decide(GATE, call())
    assert log == ["first", "a", "p0", "p1", "b"]
    assert names(app) == log
    assert len(app) == 5


def test_include_is_live_and_removable() -> None:
    """Later changes to an included registry show at once; removing the inclusion undoes it."""
    inner = HookRegistry()
    outer = HookRegistry()
    middle = HookRegistry()
    middle.include(inner)
    with outer.include(middle, priority=3) as inclusion:
        assert (inclusion.registry, inclusion.priority) == (middle, 3)
        assert not outer.has_hooks(GATE)
        reg = inner.register(GATE, lambda ctx: HookResult.deny("inner says no"))
        assert outer.has_hooks(GATE)
        assert outer.decide(GATE, call()).reason == "inner says no"
        reg.remove()
        assert not outer.has_hooks(GATE)
        inner.register(GATE, allow)
    assert not outer.has_hooks(GATE)
    assert inclusion.remove() is False


def test_an_included_registry_does_not_keep_its_includers_alive() -> None:
    """Including a shared registry holds it, not the other way round: a dropped includer is collected.

    The shared registry then changes, and is included again, as if that includer never was.
    """
    shared = HookRegistry()
    includers = [HookRegistry() for _ in range(3)]
    for includer in includers:
        includer.include(shared)
    gone = [weakref.ref(includer) for includer in includers[:2]]
    del includers[:2]
    gc.collect()
    assert [includer() for includer in gone] == [None, None]
    shared.register(GATE, lambda ctx: HookResult.deny("shared says no"))
    assert includers[0].decide(GATE, call()).reason == "shared says no"
    again = HookRegistry()
    again.include(shared)
    assert again.decide(GATE, call()).reason == "shared says no"


def test_include_refuses_self_cycles_and_double_reach() -> None:
    """include() refuses itself, a cycle, and any registry reachable twice."""
    a, b, c, d = HookRegistry(), HookRegistry(), HookRegistry(), HookRegistry()
    with pytest.raises(IncludeError, match="into itself") as info:
        a.include(a)
    assert isinstance(info.value, ValueError)
    a.include(b)
    b.include(c)
    with pytest.raises(IncludeError, match="cycle"):
        c.include(a)
    with pytest.raises(IncludeError, match="twice"):
        a.include(c)  # already reachable through b
    with pytest.raises(IncludeError, match="twice"):
        a.include(b)
    d.include(c)
    with pytest.raises(IncludeError, match="twice"):
        a.include(d)  # c would be reachable from a twice


def test_introspection_repr_len_and_html() -> None:
    """repr counts hooks per point; len counts dispatchable hooks; the HTML lists them."""
    registry = HookRegistry()
    assert repr(registry) == "HookRegistry()"
    registry.register(GATE, allow, name="<gate>")
    registry.register(HookPoint.POST_TOOL_CALL, lambda ctx: None, name="audit")
    assert repr(registry) == "HookRegistry(pre_tool_call_decide=1, post_tool_call=1)"
    assert len(registry) == 2
    page = registry._repr_html_()
    assert "&lt;gate&gt;" in page
    assert "audit" in page


def test_registration_logs_only_when_debug_is_enabled() -> None:
    """hook_registered / hook_removed are debug events, built only when DEBUG is on."""
    registry = HookRegistry()
    logger = logging.getLogger("hookreg")
    with capture_logs() as quiet:
        registry.register(GATE, allow).remove()
    assert quiet == []
    logger.setLevel(logging.DEBUG)
    try:
        with capture_logs() as logs:
            registry.register(GATE, allow, name="g").remove()
    finally:
        logger.setLevel(logging.NOTSET)
    assert [e["event"] for e in logs] == ["hook_registered", "hook_removed"]
    assert logs[0] == {"event": "hook_registered", "point": "pre_tool_call_decide", "hook": "g", "log_level": "debug"}


def test_async_detection() -> None:
    """async def functions, async __call__ objects and partials of either count as async."""

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    class Gate:
        async def __call__(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

    def two(ctx: PreToolCallDecideContext, extra: int) -> HookResult:
        return HookResult.allow()

    registry = HookRegistry()
    assert registry.register(GATE, gate).is_async
    assert registry.register(GATE, Gate()).is_async
    assert registry.register(GATE, functools.partial(gate)).is_async
    assert not registry.register(GATE, functools.partial(two, extra=1)).is_async
    assert not registry.register(GATE, allow).is_async


def test_hook_may_change_registry_during_dispatch() -> None:
    """A hook that registers or removes hooks affects the next dispatch, not the running one."""
    registry = HookRegistry()
    log: list[str] = []

    def late(ctx: PreToolCallDecideContext) -> HookResult:
        log.append("late")
        return HookResult.allow()

    def first(ctx: PreToolCallDecideContext) -> HookResult:
        log.append("first")
        registry.register(GATE, late)
        own.remove()
        return HookResult.allow()

    own = registry.register(GATE, first)
    registry.decide(GATE, call())
    assert log == ["first"]
    registry.decide(GATE, call())
    assert log == ["first", "late"]


@pytest.mark.slow
def test_threads_dispatch_while_others_register_and_remove() -> None:
    """A bounded stress run: dispatchers never fail, and no registration is lost."""
    registry = HookRegistry()
    keeper_count = 100
    stop = threading.Event()
    errors: list[BaseException] = []
    seen: list[int] = []

    def dispatcher() -> None:
        ctx = PostToolCallContext(
            tool_name="t", args={}, call_id="c", result="", raw_result=None, duration_ms=0.0, metadata={}
        )
        try:
            while not stop.is_set():
                registry.notify(HookPoint.POST_TOOL_CALL, ctx)
                seen.append(len(registry.callbacks(HookPoint.POST_TOOL_CALL)))
        except BaseException as exc:  # noqa: BLE001 -- collected for the assertion below
            errors.append(exc)

    def churner(tag: int) -> None:
        try:
            for i in range(keeper_count):
                registry.register(HookPoint.POST_TOOL_CALL, lambda ctx: None, name=f"keep-{tag}-{i}")
                temp = registry.register(HookPoint.POST_TOOL_CALL, lambda ctx: None, name=f"temp-{tag}-{i}")
                registry.register(GATE, lambda ctx: HookResult.allow(), name=f"gate-{tag}-{i}").remove()
                assert temp.remove()
        except BaseException as exc:  # noqa: BLE001 -- collected for the assertion below
            errors.append(exc)

    readers = [threading.Thread(target=dispatcher) for _ in range(2)]
    writers = [threading.Thread(target=churner, args=(tag,)) for tag in range(3)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert errors == []
    kept = sorted(reg.name for reg in registry.callbacks(HookPoint.POST_TOOL_CALL))
    assert kept == sorted(f"keep-{t}-{i}" for t in range(3) for i in range(keeper_count))
    assert not registry.has_hooks(GATE)
    assert seen


@pytest.mark.parametrize("point", list(HookPoint), ids=str)
def test_every_decorator_works_bare_and_with_options(point: HookPoint) -> None:
    """Each point's decorator registers the function bare and with options, and returns it."""
    registry = HookRegistry()
    decorator = getattr(registry, point.value)

    def hook(ctx: object) -> None:
        return None

    assert decorator(hook) is hook
    options: dict[str, object] = {"name": "named", "priority": 3}
    if point.is_tool_scoped:
        options["tools"] = "bash"
    assert decorator(**options)(hook) is hook
    first, second = registry.callbacks(point)
    assert (first.name, first.priority, first.point) == ("named", 3, point)
    assert second.callback is hook


def test_signatures_are_checked_for_every_kind_of_callable() -> None:
    """Callable objects and partials are checked too; builtins without a signature are trusted."""

    class TwoArgs:
        def __call__(self, ctx: object, extra: object) -> None:
            return None

    registry = HookRegistry()
    with pytest.raises(HookSignatureError, match="one positional argument"):
        registry.register(HookPoint.POST_TURN, TwoArgs())  # type: ignore[arg-type]
    assert not registry.register(HookPoint.POST_TURN, functools.partial(lambda a, ctx: None, 1)).is_async
    assert registry.register(HookPoint.POST_TURN, vars).callback is vars  # no signature to read
    assert len(registry.callbacks(HookPoint.POST_TURN)) == 2
    registry.register(HookPoint.POST_TURN, lambda *args: None)


def test_a_registration_s_label_is_its_name_as_tables_show_it() -> None:
    """A hook defined in a function is labelled without its <locals> path; other names stay as they are."""

    def make() -> Registration:
        def gate(ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

        return HookRegistry().register(GATE, gate)

    reg = make()
    assert (reg.name, reg.label) == (
        "test_a_registration_s_label_is_its_name_as_tables_show_it.<locals>.make.<locals>.gate",
        "gate",
    )
    assert HookRegistry().register(GATE, allow, name="my.gate").label == "my.gate"


def test_handles_have_readable_reprs() -> None:
    """Registrations and inclusions say what they are."""
    registry = HookRegistry()
    reg = registry.register(GATE, allow, name="g", priority=2)
    inclusion = HookRegistry().include(registry, priority=1)
    assert repr(reg) == "<Registration pre_tool_call_decide 'g' priority=2>"
    assert repr(inclusion) == "<Inclusion of HookRegistry(pre_tool_call_decide=1) priority=1>"


def test_len_counts_every_hook_through_registrations_inclusions_removals_and_wrappers() -> None:
    """`len` is kept as hooks come and go (one read, not a walk over the points): it always equals the
    hooks every point's dispatch would call, included registries' too."""
    inner, outer = HookRegistry(), HookRegistry()

    def counted(registry: HookRegistry) -> int:
        return sum(len(registry.callbacks(point)) for point in HookPoint)

    steps: list[Callable[[], object]] = [
        lambda: inner.register(HookPoint.PRE_TURN, lambda ctx: None, name="a"),
        lambda: outer.register(HookPoint.STOP, lambda ctx: None, name="b"),
        lambda: outer.include(inner),
        lambda: inner.register(HookPoint.PRE_TURN, lambda ctx: None, name="c"),
        lambda: inner.register(HookPoint.PRE_TURN, lambda ctx: None, name="c"),  # replaces c
    ]
    for step in steps:
        step()
        assert (len(inner), len(outer)) == (counted(inner), counted(outer))
    with outer.trace():
        assert (len(inner), len(outer)) == (counted(inner), counted(outer)) == (2, 3)
    inner.unregister("a")
    assert (len(inner), len(outer)) == (1, 2)


def test_listens_agrees_with_has_hooks_of_each_point_through_inclusions_and_removals() -> None:
    """`listens(registry, points)` (what adapters ask per framework event) is ``any(has_hooks)`` at every change."""
    inner, outer = HookRegistry(), HookRegistry()
    outer.include(inner)
    observe = HookPoint.POST_TOOL_CALL

    def agrees() -> None:
        for registry in (inner, outer):
            for points in ((GATE,), (observe,), (GATE, observe), (HookPoint.STOP, HookPoint.PRE_TURN), ()):
                assert listens(registry, points) is any(map(registry.has_hooks, points)), (registry, points)

    agrees()
    gate = inner.register(GATE, allow)
    agrees()
    assert listens(outer, (HookPoint.STOP, GATE))
    seen = outer.register(observe, lambda ctx: None)
    second = inner.register(GATE, lambda ctx: HookResult.allow())
    agrees()
    gate.remove()
    agrees()
    assert listens(outer, (GATE,))  # the second gate still listens
    second.remove()
    seen.remove()
    agrees()
    assert not listens(outer, tuple(HookPoint))
