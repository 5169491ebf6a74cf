"""Conformance kit: the run contract (DESIGN §8) as scenarios that every loop wired to hookreg must pass.

A loop's test (an adapter's, or yours for a loop of your own) supplies a `Framework`: it wires a
registry and two tools, `TOOL_NAME` and `OTHER_TOOL`, into the framework's real loop once, offline,
and the `Wiring` it returns plays the kit's scripted model `Answer`s as often as a scenario asks.
Each `RunScenario` builds a fresh registry and recording tools, runs, and raises `AssertionError`
naming the scenario, the mode and the framework when the loop broke the contract::

    @pytest.mark.parametrize(("scenario", "streamed"), run_contract_cases(FRAMEWORK))
    def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
        scenario.check(FRAMEWORK, streamed=streamed)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hookreg import (
    FinishReason,
    HookPoint,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelTurnFinishedContext,
    OnInteractionContext,
    OnSessionEndContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
    StopRun,
    ToolErrorKind,
    TransformToolResultContext,
    TurnAction,
)

__all__ = [
    "OTHER_TOOL",
    "RUN_SCENARIOS",
    "TOOL_NAME",
    "Answer",
    "Call",
    "Framework",
    "RecordingTool",
    "ReportedError",
    "RunReport",
    "RunScenario",
    "Wiring",
    "echo",
    "is_limit",
    "run_contract_cases",
]

TOOL_NAME = "echo"
"""The tool the scripted model calls, with `echo`'s signature; every wiring offers it."""

OTHER_TOOL = "other"
"""The second tool every wiring offers, with `echo`'s signature."""


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
        return echo(**kwargs)  # type: ignore[arg-type]  # the wiring passes echo's own arguments


def _explicit(args: Mapping[str, object]) -> dict[str, object]:
    """Drop arguments equal to echo's defaults: frameworks differ in whether they fill defaults in."""
    return {key: value for key, value in args.items() if not (key in {"prefix", "suffix"} and value == "")}


class ReportedError(Exception):
    """Raised by a kit tool to ask the wiring for a failure reported the framework's own way.

    A wiring's tool wrapper catches it and fails the call as its framework
    reports tool failures without an exception escaping the tool: an error
    result (Strands ``status: "error"``, a LangChain ``ToolException`` under
    ``handle_tool_error``), a retry request (pydantic-ai ``ModelRetry``), and so on.
    """


@dataclass(frozen=True)
class Call:
    """One tool call a scripted answer makes.

    Attributes:
        args: The arguments: a mapping, or a `str` the model sends as its raw
            argument text (malformed JSON, or JSON that is not an object).
        tool_name: The tool called.
        call_id: The call's id, unique within the run.
    """

    args: Mapping[str, object] | str
    tool_name: str = TOOL_NAME
    call_id: str = "call-1"


@dataclass(frozen=True)
class Answer:
    """One scripted model answer.

    Attributes:
        text: The answer text.
        calls: The tool calls, in order (several: parallel calls in one turn).
        truncated: The model stopped at its output cap; the wiring reports it the
            framework's own way (``"length"``, ``"max_tokens"``, ``"MAX_TOKENS"``...).
        error: The model call raises this instead of answering.
        hang: The model call never returns (until cancelled).
    """

    text: str = ""
    calls: tuple[Call, ...] = ()
    truncated: bool = False
    error: Exception | None = None
    hang: bool = False


@dataclass(frozen=True)
class RunReport:
    """What one run showed the model and the caller.

    Attributes:
        tool_messages: For each call id, the text the model read for that call
            (a result, an error, a denial or a "not run" notice).
        output: The run's final answer text.
    """

    tool_messages: Mapping[str, str]
    output: str


class Wiring(Protocol):
    """A registry and tools wired into a framework's loop once; runs may reuse it, also concurrently."""

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        """Run the agent once on `prompt`, the model playing `answers` in order.

        Args:
            answers: The model's answers, one per model call.
            prompt: The user prompt.
            streamed: Use the framework's streaming entry point.

        Returns:
            What the model read for each call and the final answer.

        Raises:
            StopRun: A hook stopped the run (as the same object), where the framework lets it through.
            Exception: The model's error, as the framework surfaces it.
            asyncio.CancelledError: The run's task was cancelled.
        """
        ...


class Framework(Protocol):
    """What an adapter's test supplies to run the run-contract scenarios.

    Attributes:
        name: The framework's name, for messages.
        streams: Whether the framework has a streaming entry point.
        stop_raises: Whether a `StopRun` reaches the caller as an exception
            (else the run returns and ``on_session_end`` says ``stopped``).
        limits: Scenario name → why this framework cannot honour it; such a
            scenario is reported as a limit instead of run. A key
            ``"<name>/blocking"`` or ``"<name>/streamed"`` limits one mode only.
    """

    name: str
    streams: bool
    stop_raises: bool
    limits: Mapping[str, str]

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> Wiring:
        """Wire `registry` and `tools` (each with echo's signature) into the framework's loop.

        Args:
            registry: The hooks.
            tools: Tool name → implementation; call it with the arguments the tool received.

        Returns:
            The wiring, reusable across runs.
        """
        ...


@dataclass
class _Run:
    """One run-contract scenario's registry, tools and recorded points."""

    registry: HookRegistry = field(default_factory=HookRegistry)
    tools: dict[str, RecordingTool] = field(
        default_factory=lambda: {TOOL_NAME: RecordingTool(), OTHER_TOOL: RecordingTool()}
    )
    events: list[tuple[str, object]] = field(default_factory=list)

    def observe(self, *points: HookPoint) -> None:
        """Record every dispatch of `points`: observe points, or ``user_prompt_submit`` / ``pre_turn`` (allowed).

        The recorders are registered first, so they see every dispatch.
        """
        for point in points:
            gate = point in {HookPoint.USER_PROMPT_SUBMIT, HookPoint.PRE_TURN}
            recorder = functools.partial(self._allow if gate else self._seen, point.value)
            self.registry.register(point, recorder, name=f"kit-{point.value}")

    def _seen(self, key: str, ctx: object) -> None:
        self.events.append((key, ctx))

    def _allow(self, key: str, ctx: object) -> HookResult:
        self._seen(key, ctx)
        return HookResult.allow()

    def answer(self, result: HookResult) -> None:
        """Answer every ``on_interaction`` question with `result`, recording the question."""

        def answering(ctx: OnInteractionContext) -> HookResult:
            self._seen("on_interaction", ctx)
            return result

        self.registry.register(HookPoint.ON_INTERACTION, answering, name="kit-answer")

    def seen(self, key: str) -> list[Any]:
        """The contexts recorded for the point named `key`."""
        return [ctx for name, ctx in self.events if name == key]

    def order(self) -> list[str]:
        """The points recorded, in order."""
        return [name for name, _ in self.events]

    def wire(self, framework: Framework) -> Wiring:
        """Wire this scenario's registry and tools into `framework`."""
        return framework.wire(self.registry, self.tools)

    def ran(self, tool: str = TOOL_NAME) -> list[dict[str, object]]:
        """The arguments `tool` really ran with."""
        return self.tools[tool].calls


@dataclass(frozen=True)
class RunScenario:
    """One row of the run contract an adapter (and the harness) must honour.

    Attributes:
        name: A short identifier, usable as a pytest id.
    """

    name: str
    _body: Callable[[Framework, bool], Coroutine[Any, Any, None]] = field(repr=False, compare=False)

    def check(self, framework: Framework, *, streamed: bool = False) -> None:
        """Run the scenario against `framework` (its streaming entry point when `streamed`).

        Raises:
            AssertionError: The framework broke the contract; the message names the scenario.
        """
        mode = "streamed" if streamed else "blocking"
        try:
            asyncio.run(self._body(framework, streamed))
        except AssertionError as exc:
            msg = f"run-contract scenario {self.name!r} ({mode}) failed on {framework.name}: {exc}"
            raise AssertionError(msg) from exc
        except Exception as exc:
            msg = f"run-contract scenario {self.name!r} ({mode}) failed on {framework.name}: it raised {exc!r}"
            raise AssertionError(msg) from exc


_END_POINTS = (HookPoint.ON_SESSION_START, HookPoint.ON_SESSION_END)
_TOOL_POINTS = (
    HookPoint.INVALID_TOOL_CALL,
    HookPoint.PERMISSION_DENIED,
    HookPoint.POST_TOOL_CALL_FAILURE,
    HookPoint.TRANSFORM_TOOL_RESULT,
    HookPoint.POST_TOOL_CALL,
)
_DONE = Answer(text="done")


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def _one_call(setup: _Run, framework: Framework, streamed: bool, text: str = "hi") -> RunReport:
    """Run once: the model calls echo with `text` (call id ``call-1``), then answers."""
    answers = (Answer(calls=(Call({"text": text}),)), _DONE)
    return await setup.wire(framework).run(answers, prompt=f"echo {text}", streamed=streamed)


def _message(report: RunReport, call_id: str) -> str:
    _expect(call_id in report.tool_messages, f"the model read nothing for call {call_id!r}: {report.tool_messages}")
    return report.tool_messages[call_id]


def _ended(setup: _Run, status: str) -> OnSessionEndContext:
    ends = setup.seen("on_session_end")
    _expect(len(ends) == 1, f"on_session_end fired {len(ends)} times, expected once")
    end: OnSessionEndContext = ends[0]
    _expect(end.outcome.status == status, f"the run ended {end.outcome!r}, expected status {status!r}")
    return end


async def _parallel_calls_one_denied(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(*_END_POINTS, *_TOOL_POINTS)

    @setup.registry.pre_tool_call_decide(tools=TOOL_NAME)
    def no_b(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("b is off limits") if ctx.args.get("text") == "b" else HookResult.allow()

    calls = (Call({"text": "a"}, call_id="call-a"), Call({"text": "b"}, call_id="call-b"))
    report = await setup.wire(framework).run((Answer(calls=calls), _DONE), prompt="echo a and b", streamed=streamed)
    _expect(setup.ran() == [{"text": "a"}], f"echo ran with {setup.ran()}, expected only the allowed call")
    _expect("a" in _message(report, "call-a"), f"the model read {report.tool_messages} for the allowed call")
    _expect("b is off limits" in _message(report, "call-b"), f"the model read {report.tool_messages}")
    denied = setup.seen("permission_denied")
    _expect([d.call_id for d in denied] == ["call-b"], f"permission_denied fired for {denied}, expected call-b")
    _expect(
        denied[0].tool_name == TOOL_NAME and denied[0].reason == "b is off limits",
        f"permission_denied saw {denied[0]!r}",
    )
    _expect(len(setup.seen("post_tool_call")) == 1, "post_tool_call did not fire exactly once")
    _ended(setup, "completed")


async def _deny_with_empty_reason(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(HookPoint.PERMISSION_DENIED)
    setup.registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny(""), name="silent-gate")
    report = await _one_call(setup, framework, streamed)
    _expect(setup.ran() == [], f"the tool ran with {setup.ran()} after a deny with an empty reason")
    _expect(_message(report, "call-1").strip() != "", "the model read an empty text for the denied call")
    _expect(len(setup.seen("permission_denied")) == 1, "permission_denied did not fire once")


async def _interaction_answers_do_not_fail_open(framework: Framework, streamed: bool) -> None:
    for answer in (HookResult.deny(""), HookResult.ask("ask someone else")):
        setup = _Run()
        setup.registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
        setup.answer(answer)
        await _one_call(setup, framework, streamed)
        _expect(setup.ran() == [], f"the tool ran after on_interaction answered {answer!r}")


async def _tool_ask_notifies_first(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(HookPoint.NOTIFICATION)
    setup.registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
    setup.answer(HookResult.allow())
    seen = _message(await _one_call(setup, framework, streamed, "approved"), "call-1")
    _expect(setup.ran() == [{"text": "approved"}], f"the approved tool ran with {setup.ran()}")
    _expect("approved" in seen, f"the model read {seen!r}, not the approved call's result 'approved'")
    _expect(
        setup.order() == ["notification", "on_interaction"],
        f"points fired {setup.order()}, expected notification then on_interaction",
    )
    questions = [ctx.question for ctx in setup.seen("on_interaction")]
    _expect(questions == ["may echo run?"], f"on_interaction was asked {questions}, expected the gate's question")


async def _interaction_deny_fires_permission_denied(framework: Framework, streamed: bool) -> None:
    for answer in (None, HookResult.deny("the user said no")):
        setup = _Run()
        setup.observe(HookPoint.PERMISSION_DENIED, HookPoint.POST_TOOL_CALL)
        setup.registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
        if answer is not None:
            setup.answer(answer)
        reason = "no interaction hook" if answer is None else answer.reason
        seen = _message(await _one_call(setup, framework, streamed), "call-1")
        label = "an unanswered ask" if answer is None else f"an ask answered {answer!r}"
        _expect(setup.ran() == [], f"the tool ran with {setup.ran()} after {label}")
        _expect(reason in seen, f"the model read {seen!r} after {label}, not the deny's reason {reason!r}")
        denied = setup.seen("permission_denied")
        _expect(len(denied) == 1, f"permission_denied fired {len(denied)} times after {label}, expected once")
        _expect(denied[0].call_id == "call-1" and reason in denied[0].reason, f"permission_denied saw {denied[0]!r}")
        _expect(setup.seen("post_tool_call") == [], f"post_tool_call fired after {label}")


_EXPLODING_GATE = "kit-exploding-gate"


async def _raising_gate_denies(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(HookPoint.PERMISSION_DENIED)

    @setup.registry.pre_tool_call_decide(name=_EXPLODING_GATE)
    def exploding_gate(ctx: PreToolCallDecideContext) -> HookResult:
        msg = "policy backend unreachable"
        raise ConnectionError(msg)

    with _expected_failure(_EXPLODING_GATE):
        seen = _message(await _one_call(setup, framework, streamed), "call-1")
    _expect(setup.ran() == [], f"the tool ran with {setup.ran()} although its gate raised")
    _expect(_EXPLODING_GATE in seen, f"the model read {seen!r}, not the denial naming the failed gate")
    _expect(len(setup.seen("permission_denied")) == 1, "permission_denied did not fire once for the failed gate")


@contextlib.contextmanager
def _expected_failure(hook: str) -> Iterator[None]:
    """Keep the log record of `hook`'s failure, which the scenario causes on purpose, off the application's logs.

    With logging not set up, Python's last-resort handler would print it to stderr during a passing run.
    hookreg's records reach the "hookreg" logger also when structlog is configured, but then as structlog
    rendered them (a string, or an event dict): the hook's name in the message is what every form shares.
    """
    logger = logging.getLogger("hookreg")

    def unexpected(record: logging.LogRecord) -> bool:
        return hook not in record.getMessage()

    logger.addFilter(unexpected)
    try:
        yield
    finally:
        logger.removeFilter(unexpected)


async def _input_transforms_chain(framework: Framework, streamed: bool) -> None:
    setup = _Run()
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

    seen = _message(await _one_call(setup, framework, streamed, "hello"), "call-1")
    expected = {"text": "hello", "prefix": "[", "suffix": "]"}
    _expect(gated == [expected], f"the gate saw {gated}, expected [{expected}] (the rewritten args, once)")
    _expect(setup.ran() == [expected], f"the tool ran with {setup.ran()}, expected [{expected}]")
    _expect("[hello]" in seen, f"the model read {seen!r}, not the result of the rewritten call '[hello]'")


async def _observers_fire_once(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(*_TOOL_POINTS)
    seen = _message(await _one_call(setup, framework, streamed, "hello"), "call-1")
    _expect(setup.ran() == [{"text": "hello"}], f"the tool ran with {setup.ran()}, expected one call")
    _expect("hello" in seen, f"the model read {seen!r}, not the tool result 'hello'")
    posts: list[PostToolCallContext] = setup.seen("post_tool_call")
    _expect(len(posts) == 1, f"post_tool_call fired {len(posts)} times, expected once")
    _expect(
        posts[0].tool_name == TOOL_NAME
        and posts[0].result == "hello"
        and posts[0].raw_result == "hello"
        and _explicit(posts[0].args) == {"text": "hello"},
        f"post_tool_call saw {posts[0]!r}",
    )
    others = [name for name in setup.order() if name not in {"post_tool_call", "transform_tool_result"}]
    _expect(others == [], f"{others} fired for a call that ran and succeeded")


async def _result_rewrite_reaches_model(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(HookPoint.POST_TOOL_CALL)

    @setup.registry.transform_tool_result(tools=TOOL_NAME)
    def shout(ctx: TransformToolResultContext) -> str:
        return ctx.presentation.upper()

    seen = _message(await _one_call(setup, framework, streamed, "hello"), "call-1")
    _expect("HELLO" in seen, f"the model read {seen!r}, not the rewritten result 'HELLO'")
    posts: list[PostToolCallContext] = setup.seen("post_tool_call")
    _expect(
        [post.result for post in posts] == ["HELLO"], f"post_tool_call saw {posts}, expected the rewritten result once"
    )


def _invalid_call_scenario(
    call: Call, kind: ToolErrorKind, *, offered: frozenset[str] | None = None
) -> Callable[[Framework, bool], Coroutine[Any, Any, None]]:
    """A scenario: `call` is invalid, reaches invalid_tool_call, never runs, and fails with `kind` by default."""

    async def body(framework: Framework, streamed: bool) -> None:
        for hooked in (False, True):
            setup = _Run()
            setup.observe(*_TOOL_POINTS, HookPoint.ON_TOOL_ERROR)
            if offered is not None:
                setup.registry.pre_model_call(lambda ctx: RequestPatch(active_tools=offered))
            if hooked:
                setup.registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.skip("call skipped by the kit"))
            report = await setup.wire(framework).run((Answer(calls=(call,)), _DONE), prompt="go", streamed=streamed)
            ran = {name: tool.calls for name, tool in setup.tools.items() if tool.calls}
            _expect(ran == {}, f"an invalid call {call} ran: {ran}")
            invalid = setup.seen("invalid_tool_call")
            _expect(len(invalid) == 1, f"invalid_tool_call fired {len(invalid)} times for {call}, expected once")
            ctx: InvalidToolCallContext = invalid[0]
            _expect(isinstance(ctx.args, Mapping), f"invalid_tool_call saw args {ctx.args!r}, not a mapping")
            if isinstance(call.args, str):
                _expect(ctx.args == {}, f"invalid_tool_call saw args {ctx.args!r} for raw text, expected {{}}")
                _expect(ctx.raw_args is not None, "invalid_tool_call lost the model's raw arguments")
            seen = _message(report, call.call_id)
            if hooked:
                _expect("call skipped by the kit" in seen, f"the model read {seen!r}, not the skip reason")
                _expect(setup.seen("post_tool_call_failure") == [], "a skipped call fired post_tool_call_failure")
            else:
                errors = setup.seen("on_tool_error")
                _expect(len(errors) == 1, f"on_tool_error fired {len(errors)} times for a failed invalid call")
                _expect(errors[0].kind is kind, f"on_tool_error saw kind {errors[0].kind}, expected {kind}")
            _expect(setup.seen("post_tool_call") == [], "post_tool_call fired for an invalid call")

    return body


async def _tool_fails(framework: Framework, streamed: bool) -> None:
    for error in (RuntimeError("echo broke"), ReportedError("echo reported a failure")):
        setup = _Run()
        setup.observe(*_TOOL_POINTS, HookPoint.ON_TOOL_ERROR)

        def broken(error: Exception = error, **kwargs: object) -> str:
            raise error

        setup.tools[TOOL_NAME] = _FailingTool(broken)
        setup.registry.on_tool_error(lambda ctx: f"hook says: {type(ctx.error).__name__}")
        report = await _one_call(setup, framework, streamed)
        label = type(error).__name__
        _expect(setup.ran() == [{"text": "hi"}], f"the failing tool ran with {setup.ran()}, expected once")
        failures = setup.seen("post_tool_call_failure")
        _expect(len(failures) == 1, f"post_tool_call_failure fired {len(failures)} times for a {label}")
        _expect(setup.seen("post_tool_call") == [], f"post_tool_call fired for a tool that failed with {label}")
        _expect(setup.seen("transform_tool_result") == [], f"transform_tool_result fired for a {label} failure")
        _expect(
            "hook says" in _message(report, "call-1"), f"the model read {report.tool_messages}, not on_tool_error's"
        )
        errors = [ctx.error for ctx in setup.seen("on_tool_error")]
        _expect(len(errors) == 1, f"on_tool_error fired {len(errors)} times for a {label}, expected once")
        if not isinstance(error, ReportedError):  # the framework reports that one as its own error type
            _expect(
                type(errors[0]) is type(error) and str(errors[0]) == str(error),
                f"on_tool_error saw {errors[0]!r}, not the tool's {error!r}",
            )


class _FailingTool(RecordingTool):
    """A recording tool whose body is `fn` (which raises)."""

    def __init__(self, fn: Callable[..., str]) -> None:
        super().__init__()
        self._fn = fn

    def __call__(self, **kwargs: object) -> str:
        self.calls.append(_explicit(kwargs))
        return self._fn(**kwargs)


def _stop_scenario(point: HookPoint) -> Callable[[Framework, bool], Coroutine[Any, Any, None]]:
    """A scenario: a hook at `point` raises StopRun; the run stops, as the same object, ended once."""

    async def body(framework: Framework, streamed: bool) -> None:
        setup = _Run()
        setup.observe(*_END_POINTS)
        stop = StopRun(f"stopped at {point.value}")

        def halt(ctx: object) -> None:
            raise stop

        setup.registry.register(point, halt, name="halt")
        calls = (Call({"text": "a"}, call_id="call-a"), Call({"text": "b"}, call_id="call-b"))
        raised: BaseException | None = None
        try:
            await setup.wire(framework).run((Answer(calls=calls), _DONE), prompt="go", streamed=streamed)
        except StopRun as exc:
            raised = exc
        if framework.stop_raises:
            _expect(raised is stop, f"the caller got {raised!r}, not the StopRun the hook raised")
        end = _ended(setup, "stopped")
        _expect(end.outcome.reason == stop.reason, f"the run ended {end.outcome!r}, not with the stop's reason")
        if point is HookPoint.PRE_TOOL_CALL_DECIDE:
            _expect(setup.ran() == [], f"echo ran with {setup.ran()} although its gate stopped the run")

    return body


async def _model_error(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(*_END_POINTS)
    error = RuntimeError("model is down")
    raised: BaseException | None = None
    try:
        await setup.wire(framework).run((Answer(error=error),), prompt="go", streamed=streamed)
    except Exception as exc:  # noqa: BLE001 -- frameworks may wrap the model's error
        raised = exc
    chain: list[BaseException] = []
    while raised is not None and raised not in chain:
        chain.append(raised)
        raised = raised.__cause__ or raised.__context__
    _expect(error in chain, f"the caller did not get the model's error (got {chain})")
    _ended(setup, "failed")


async def _cancellation(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(*_END_POINTS)
    task = asyncio.ensure_future(setup.wire(framework).run((Answer(hang=True),), prompt="go", streamed=streamed))
    for _ in range(200):  # let the run reach the hanging model call
        await asyncio.sleep(0.005)
        if setup.seen("on_session_start"):
            break
    await asyncio.sleep(0.05)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the cancelled run returned instead of raising CancelledError")
    _ended(setup, "cancelled")


async def _wiring_reused(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(HookPoint.ON_SESSION_START, HookPoint.USER_PROMPT_SUBMIT, HookPoint.PRE_TURN)
    setup.registry.pre_tool_call_decide(lambda ctx: HookResult.deny("never on any run"))
    wiring = setup.wire(framework)
    for _ in range(2):
        await wiring.run((Answer(calls=(Call({"text": "hi"}),)), _DONE), prompt="go", streamed=streamed)
    starts = setup.seen("on_session_start")
    _expect(len(starts) == 2, f"on_session_start fired {len(starts)} times over two runs of one wiring")
    _expect(len(setup.seen("user_prompt_submit")) == 2, "the prompt gate did not run on both runs")
    _expect(starts[0].run.run_id != starts[1].run.run_id, "two runs of one wiring shared a run_id")
    _expect([c.turn for c in setup.seen("pre_turn")] == [1, 2, 1, 2], "turns did not count from 1 in each run")
    _expect(setup.ran() == [], f"the gate was skipped on a reused wiring: echo ran with {setup.ran()}")


async def _concurrent_runs(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    setup.observe(HookPoint.PRE_TURN)
    wiring = setup.wire(framework)
    reports = await asyncio.gather(
        *(
            wiring.run((Answer(calls=(Call({"text": word}),)), _DONE), prompt=word, streamed=streamed)
            for word in ("left", "right")
        )
    )
    _expect(
        "left" in _message(reports[0], "call-1") and "right" in _message(reports[1], "call-1"),
        f"concurrent runs mixed their tool results: {[r.tool_messages for r in reports]}",
    )
    turns = setup.seen("pre_turn")
    by_run: dict[str, list[int]] = {}
    for ctx in turns:
        by_run.setdefault(ctx.run.run_id, []).append(ctx.turn)
    _expect(sorted(by_run.values()) == [[1, 2], [1, 2]], f"concurrent runs' turns were {by_run}")


async def _run_level_ask(framework: Framework, streamed: bool) -> None:
    for approve in (False, True):
        setup = _Run()
        setup.observe(HookPoint.NOTIFICATION, *_END_POINTS)
        setup.registry.pre_turn(lambda ctx: HookResult.ask("start this turn?") if ctx.turn == 1 else HookResult.allow())
        if approve:
            setup.answer(HookResult.allow())
        answers = (Answer(calls=(Call({"text": "hi"}),)), _DONE)
        try:
            await setup.wire(framework).run(answers, prompt="go", streamed=streamed)
        except StopRun:
            _expect(not approve, "an approved run-level ask stopped the run")
        order = [name for name in setup.order() if name in {"notification", "on_interaction"}]
        _expect(order[:1] == ["notification"], f"a run-level ask fired {order}, not notification first")
        if approve:
            _expect(order == ["notification", "on_interaction"], f"a run-level ask fired {order}")
            _expect(setup.ran() == [{"text": "hi"}], "the approved run did not go on")
            _ended(setup, "completed")
        else:
            _expect(setup.ran() == [], "an unanswered run-level ask let the run go on")
            _ended(setup, "stopped")


async def _finish_reasons(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    finished: list[ModelTurnFinishedContext] = []

    @setup.registry.model_turn_finished
    def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        finished.append(ctx)
        return TurnAction.continue_run()

    await setup.wire(framework).run(
        (Answer(calls=(Call({"text": "hi"}),)), Answer(text="cut short", truncated=True)),
        prompt="go",
        streamed=streamed,
    )
    reasons = [(ctx.finish_reason, ctx.raw_finish_reason) for ctx in finished]
    _expect(len(finished) == 2, f"model_turn_finished fired {len(finished)} times, expected 2")
    _expect(finished[0].finish_reason is FinishReason.TOOL_CALLS, f"a tool-calling answer finished {reasons[0]}")
    _expect(finished[1].finish_reason is FinishReason.LENGTH, f"a truncated answer finished {reasons[1]}")
    _expect(finished[1].truncated, "a truncated answer's context said truncated=False")
    _expect(all(isinstance(raw, str) for _, raw in reasons), f"raw finish reasons were lost: {reasons}")


async def _turn_scope(framework: Framework, streamed: bool) -> None:
    setup = _Run()
    fresh: list[bool] = []

    @setup.registry.pre_turn
    def mark(ctx: PreTurnContext) -> HookResult:
        fresh.append(_TurnMark not in ctx.run.turn_scratchpad)
        ctx.run.turn_scratchpad.insert(_TurnMark())
        ctx.run.scratchpad.update(_TurnCount, lambda count: _TurnCount(count.n + 1))
        return HookResult.allow()

    @setup.registry.on_session_end
    def count(ctx: OnSessionEndContext) -> None:
        fresh.append((ctx.run.scratchpad.get(_TurnCount) or _TurnCount()).n == 2)

    await _one_call(setup, framework, streamed)
    _expect(fresh == [True, True, True], f"turn scopes fresh / run scope kept: {fresh}, expected all True")


@dataclass(frozen=True)
class _TurnMark:
    """Put in a turn's scratchpad by the turn-scope scenario."""


@dataclass(frozen=True)
class _TurnCount:
    """Counts turns in the run's scratchpad."""

    n: int = 0


RUN_SCENARIOS: tuple[RunScenario, ...] = (
    RunScenario("parallel_calls_one_denied", _parallel_calls_one_denied),
    RunScenario("deny_with_empty_reason", _deny_with_empty_reason),
    RunScenario("raising_gate_denies", _raising_gate_denies),
    RunScenario("input_transforms_chain", _input_transforms_chain),
    RunScenario("observers_fire_once", _observers_fire_once),
    RunScenario("result_rewrite_reaches_model", _result_rewrite_reaches_model),
    RunScenario("interaction_answers_do_not_fail_open", _interaction_answers_do_not_fail_open),
    RunScenario("interaction_deny_fires_permission_denied", _interaction_deny_fires_permission_denied),
    RunScenario("tool_ask_notifies_first", _tool_ask_notifies_first),
    RunScenario("non_object_arguments", _invalid_call_scenario(Call('["hi"]'), ToolErrorKind.INVALID_ARGS)),
    RunScenario("malformed_arguments", _invalid_call_scenario(Call('{"text": "hi'), ToolErrorKind.INVALID_ARGS)),
    RunScenario(
        "arguments_failing_the_schema", _invalid_call_scenario(Call({"prefix": "no text"}), ToolErrorKind.INVALID_ARGS)
    ),
    RunScenario(
        "unknown_tool", _invalid_call_scenario(Call({"text": "hi"}, tool_name="nope"), ToolErrorKind.NOT_FOUND)
    ),
    RunScenario(
        "tool_not_offered",
        _invalid_call_scenario(Call({"text": "hi"}), ToolErrorKind.NOT_FOUND, offered=frozenset({OTHER_TOOL})),
    ),
    RunScenario("tool_fails_by_exception_and_by_error_result", _tool_fails),
    RunScenario("stop_run_from_a_gate", _stop_scenario(HookPoint.PRE_TOOL_CALL_DECIDE)),
    RunScenario("stop_run_from_an_observer", _stop_scenario(HookPoint.POST_TOOL_CALL)),
    RunScenario("stop_run_from_a_tool_hook", _stop_scenario(HookPoint.TRANSFORM_TOOL_RESULT)),
    RunScenario("model_error_ends_failed", _model_error),
    RunScenario("cancellation_ends_cancelled", _cancellation),
    RunScenario("wiring_reused_for_a_second_run", _wiring_reused),
    RunScenario("concurrent_runs_on_one_wiring", _concurrent_runs),
    RunScenario("run_level_ask", _run_level_ask),
    RunScenario("finish_reasons_mapped", _finish_reasons),
    RunScenario("turn_scratchpad_fresh_each_turn", _turn_scope),
)
"""The run contract as scenarios, in a fixed order (the docs' embedding guide states it in prose).

Run each blocking and, where the framework streams, streamed: ``scenario.check(framework, streamed=...)``.
Names in ``framework.limits`` are the framework's documented exceptions."""


def run_contract_cases(framework: Framework) -> list[tuple[RunScenario, bool]]:
    """Every (scenario, streamed) pair `framework` must pass: each blocking, and streamed where it streams.

    Scenarios named in ``framework.limits`` are left out: a framework's test shows each limit is real
    (for instance, that the scenario fails there).
    """
    modes = (False, True) if framework.streams else (False,)
    return [(s, streamed) for s in RUN_SCENARIOS for streamed in modes if not is_limit(framework, s.name, streamed)]


def is_limit(framework: Framework, scenario: str, streamed: bool) -> bool:
    """Whether `framework.limits` exempts `scenario` in this mode (the whole row, or ``"<name>/<mode>"``)."""
    mode = "streamed" if streamed else "blocking"
    return scenario in framework.limits or f"{scenario}/{mode}" in framework.limits
