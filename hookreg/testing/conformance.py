"""Adapter conformance kit: the scenarios every hookreg adapter must pass in its framework's real loop.

An adapter test writes one *driver* — a function that runs the framework's
agent loop once, offline, with one tool named `TOOL_NAME` and hooks wired
from a registry through the adapter — then checks it against every scenario::

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
    def test_conformance(scenario: Scenario) -> None:
        scenario.check(my_driver)

Each scenario builds a fresh `HookRegistry` and a recording tool, calls the
driver (once, or twice for the ask scenario: unanswered, then approved) and
raises `AssertionError` naming the scenario when the framework did not honour
the hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from hookreg import (
    HookRegistry,
    HookResult,
    OnInteractionContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PreToolCallDecideContext,
    TransformToolResultContext,
)

__all__ = [
    "SCENARIOS",
    "TOOL_NAME",
    "AgentRun",
    "Driver",
    "RecordingTool",
    "Scenario",
    "echo",
    "run_conformance",
]

TOOL_NAME = "echo"
"""The name the driver must give the one tool the scripted model calls."""


def echo(text: str, prefix: str = "", suffix: str = "") -> str:
    """The reference tool: return ``prefix + text + suffix``.

    Args:
        text: The text to echo; ``"fail"`` makes the tool raise.
        prefix: Prepended to `text`.
        suffix: Appended to `text`.

    Returns:
        ``prefix + text + suffix``.

    Raises:
        RuntimeError: ``"echo failed"`` when `text` is ``"fail"``.
    """
    if text == "fail":
        msg = "echo failed"
        raise RuntimeError(msg)
    return prefix + text + suffix


@dataclass(frozen=True)
class AgentRun:
    """What the model saw after one agent run with a single ``echo`` call.

    Attributes:
        tool_output_seen_by_model: The text of the tool result (or error or
            denial message) the model received for the ``echo`` call.
    """

    tool_output_seen_by_model: str


class Driver(Protocol):
    """Runs a framework's real agent loop once with hooks from a registry.

    The driver gives the agent one tool named `TOOL_NAME` whose implementation
    calls ``tool(**received_args)``, and an offline scripted model that first
    calls `TOOL_NAME` with `args`, then answers with final text. Hooks come
    from `registry` through the adapter under test.
    """

    def __call__(self, registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> AgentRun:
        """Run the agent once and return what the model saw for the tool call.

        Args:
            registry: The hooks to wire through the adapter.
            tool: The tool implementation; call it with the arguments the tool received.
            args: The arguments the scripted model calls `TOOL_NAME` with.

        Returns:
            The tool output the model received.
        """
        ...


class RecordingTool:
    """The `echo` tool, recording the keyword arguments of every real call.

    Attributes:
        calls: The arguments of each call, in order.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def __call__(self, **kwargs: object) -> str:
        """Record the call (without arguments equal to echo's defaults), then behave like `echo`."""
        self.calls.append(_explicit(kwargs))
        return echo(**kwargs)  # type: ignore[arg-type]  # the driver passes echo's own arguments


def _explicit(args: Mapping[str, object]) -> dict[str, object]:
    """Drop arguments equal to echo's defaults: frameworks differ in whether they fill defaults in."""
    return {key: value for key, value in args.items() if not (key in {"prefix", "suffix"} and value == "")}


@dataclass(frozen=True)
class _Setup:
    """One scenario's fresh registry, recording tool and observed events."""

    registry: HookRegistry = field(default_factory=HookRegistry)
    tool: RecordingTool = field(default_factory=RecordingTool)
    events: dict[str, list[object]] = field(default_factory=dict)

    def record(self, key: str) -> Callable[[object], None]:
        """Return an observer appending its context under `key`."""
        seen = self.events.setdefault(key, [])
        return seen.append

    def seen(self, key: str) -> list[object]:
        """Return the contexts recorded under `key`."""
        return self.events.get(key, [])


@dataclass(frozen=True)
class Scenario:
    """One conformance check an adapter's driver must pass.

    Attributes:
        name: A short identifier, usable as a pytest id.
    """

    name: str
    _body: Callable[[Driver], None] = field(repr=False, compare=False)

    def check(self, driver: Driver) -> None:
        """Run the scenario against `driver`.

        Raises:
            AssertionError: The framework did not honour the hooks, or the
                driver raised; the message names the scenario.
        """
        try:
            self._body(driver)
        except AssertionError as exc:
            msg = f"conformance scenario {self.name!r} failed: {exc}"
            raise AssertionError(msg) from exc
        except Exception as exc:
            msg = f"conformance scenario {self.name!r} failed: the driver raised {exc!r}"
            raise AssertionError(msg) from exc


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _run(setup: _Setup, driver: Driver, args: Mapping[str, object]) -> str:
    run = driver(setup.registry, setup.tool, args)
    _expect(isinstance(run, AgentRun), f"the driver returned {run!r}, not an AgentRun")
    return run.tool_output_seen_by_model


def _deny_reaches_model(driver: Driver) -> None:
    setup = _Setup()
    reason = "echo is switched off for this run; answer without it"

    @setup.registry.pre_tool_call_decide(tools=TOOL_NAME)
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny(reason)

    setup.registry.permission_denied(setup.record("denied"))
    setup.registry.post_tool_call(setup.record("post"))
    seen = _run(setup, driver, {"text": "hello"})
    _expect(setup.tool.calls == [], f"the denied tool ran with {setup.tool.calls}")
    _expect(reason in seen, f"the model saw {seen!r}, not the deny reason {reason!r}")
    denied = setup.seen("denied")
    _expect(len(denied) == 1, f"permission_denied fired {len(denied)} times, expected once")
    _expect(setup.seen("post") == [], "post_tool_call fired for a denied call")
    ctx = denied[0]
    _expect(
        isinstance(ctx, PermissionDeniedContext) and ctx.tool_name == TOOL_NAME and ctx.reason == reason,
        f"permission_denied saw {ctx!r}",
    )


def _input_transforms_chain(driver: Driver) -> None:
    setup = _Setup()
    gated: list[dict[str, object]] = []

    @setup.registry.transform_tool_input(tools=TOOL_NAME)
    def add_prefix(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "prefix": "["}

    @setup.registry.transform_tool_input(tools=TOOL_NAME)
    def close_prefix(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        # Only a chained call sees the first transform's prefix.
        return {**ctx.args, "suffix": "]" if ctx.args.get("prefix") == "[" else "<unchained>"}

    @setup.registry.pre_tool_call_decide(tools=TOOL_NAME)
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(_explicit(ctx.args))
        return HookResult.allow()

    seen = _run(setup, driver, {"text": "hello"})
    expected = {"text": "hello", "prefix": "[", "suffix": "]"}
    _expect(gated == [expected], f"the gate saw {gated}, expected [{expected}] (the rewritten args, once)")
    _expect(setup.tool.calls == [expected], f"the tool ran with {setup.tool.calls}, expected [{expected}]")
    _expect("[hello]" in seen, f"the model saw {seen!r}, not the result of the rewritten call '[hello]'")


def _error_text_from_hook(driver: Driver) -> None:
    setup = _Setup()
    errors: list[BaseException] = []

    @setup.registry.on_tool_error(tools=TOOL_NAME)
    def explain(ctx: OnToolErrorContext) -> str:
        errors.append(ctx.error)
        return f"echo could not run ({ctx.error}); call it with other text"

    setup.registry.post_tool_call_failure(setup.record("failure"))
    setup.registry.post_tool_call(setup.record("post"))
    seen = _run(setup, driver, {"text": "fail"})
    _expect(setup.tool.calls == [{"text": "fail"}], f"the tool ran with {setup.tool.calls}, expected one call")
    _expect(
        len(errors) == 1 and isinstance(errors[0], RuntimeError) and str(errors[0]) == "echo failed",
        f"on_tool_error saw {errors}, expected the tool's RuntimeError once",
    )
    wanted = "echo could not run (echo failed); call it with other text"
    _expect(wanted in seen, f"the model saw {seen!r}, not the on_tool_error text {wanted!r}")
    failures = setup.seen("failure")
    _expect(len(failures) == 1, f"post_tool_call_failure fired {len(failures)} times, expected once")
    _expect(isinstance(failures[0], PostToolCallFailureContext), f"post_tool_call_failure saw {failures[0]!r}")
    _expect(setup.seen("post") == [], "post_tool_call fired for a failed call")


def _observers_fire_once(driver: Driver) -> None:
    setup = _Setup()
    setup.registry.post_tool_call(setup.record("post"))
    setup.registry.post_tool_call_failure(setup.record("failure"))
    setup.registry.permission_denied(setup.record("denied"))
    seen = _run(setup, driver, {"text": "hello"})
    _expect(setup.tool.calls == [{"text": "hello"}], f"the tool ran with {setup.tool.calls}, expected one call")
    _expect("hello" in seen, f"the model saw {seen!r}, not the tool result 'hello'")
    posts = setup.seen("post")
    _expect(len(posts) == 1, f"post_tool_call fired {len(posts)} times, expected once")
    ctx = posts[0]
    _expect(
        isinstance(ctx, PostToolCallContext)
        and ctx.tool_name == TOOL_NAME
        and ctx.result == "hello"
        and ctx.raw_result == "hello"
        and _explicit(ctx.args) == {"text": "hello"},
        f"post_tool_call saw {ctx!r}",
    )
    _expect(setup.seen("failure") == [] and setup.seen("denied") == [], "a failure or denial observer fired")


def _raising_gate_denies(driver: Driver) -> None:
    setup = _Setup()

    @setup.registry.pre_tool_call_decide(name="exploding-gate")
    def exploding_gate(ctx: PreToolCallDecideContext) -> HookResult:
        msg = "policy backend unreachable"
        raise ConnectionError(msg)

    seen = _run(setup, driver, {"text": "hello"})
    _expect(setup.tool.calls == [], f"the tool ran with {setup.tool.calls} although its gate raised")
    _expect("exploding-gate" in seen, f"the model saw {seen!r}, not the denial naming the failed gate")


def _ask_goes_to_on_interaction(driver: Driver) -> None:
    setup = _Setup()
    questions: list[str] = []
    setup.registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
    seen = _run(setup, driver, {"text": "hello"})
    _expect(setup.tool.calls == [], f"the tool ran with {setup.tool.calls} although nobody answered the ask")
    _expect("no interaction hook" in seen, f"the model saw {seen!r}, not the denial of an unanswered ask")

    @setup.registry.on_interaction
    def approve(ctx: OnInteractionContext) -> HookResult:
        questions.append(ctx.question)
        return HookResult.allow()

    seen = _run(setup, driver, {"text": "hello"})
    _expect(questions == ["may echo run?"], f"on_interaction was asked {questions}, expected the gate's question")
    _expect(setup.tool.calls == [{"text": "hello"}], f"the approved tool ran with {setup.tool.calls}")
    _expect("hello" in seen, f"the model saw {seen!r}, not the approved call's result")


def _result_rewrite_reaches_model(driver: Driver) -> None:
    setup = _Setup()

    @setup.registry.transform_tool_result(tools=TOOL_NAME)
    def shout(ctx: TransformToolResultContext) -> str:
        return ctx.presentation.upper()

    setup.registry.post_tool_call(setup.record("post"))
    seen = _run(setup, driver, {"text": "hello"})
    _expect("HELLO" in seen, f"the model saw {seen!r}, not the rewritten result 'HELLO'")
    posts = setup.seen("post")
    _expect(
        len(posts) == 1 and isinstance(posts[0], PostToolCallContext) and posts[0].result == "HELLO",
        f"post_tool_call saw {posts}, expected the rewritten result once",
    )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("deny_reaches_model", _deny_reaches_model),
    Scenario("input_transforms_chain", _input_transforms_chain),
    Scenario("error_text_from_on_tool_error", _error_text_from_hook),
    Scenario("observers_fire_once", _observers_fire_once),
    Scenario("raising_gate_denies", _raising_gate_denies),
    Scenario("ask_goes_to_on_interaction", _ask_goes_to_on_interaction),
    Scenario("result_rewrite_reaches_model", _result_rewrite_reaches_model),
)
"""Every scenario an adapter must pass, in a fixed order."""


def run_conformance(driver: Driver) -> None:
    """Run every scenario in `SCENARIOS` against `driver`.

    Raises:
        AssertionError: The first scenario the driver failed, named in the message.
    """
    for scenario in SCENARIOS:
        scenario.check(driver)
