"""Telemetry never changes a run: a raising span processor costs the span, never the dispatch (DESIGN §11)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import hookreg.otel
from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    PreToolCallDecideContext,
    TextDeltaContext,
    TransformToolResultContext,
)

TOOL = PreToolCallDecideContext(tool_name="bash", args={"command": "ls"}, call_id="c1")
RESULT = TransformToolResultContext(
    tool_name="bash", args={"command": "ls"}, call_id="c1", raw_result=0, presentation="ok"
)
DELTA = TextDeltaContext(delta="a", aggregated="a")


class Broken(SpanProcessor):
    """A span processor that raises `exc` at `where`: ``on_start``, ``on_end``, or ``add_event`` (on every event)."""

    def __init__(self, where: str, exc: Callable[[], BaseException] = lambda: RuntimeError("exporter down")) -> None:
        self.where = where
        self.exc = exc

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.where == "on_start":
            raise self.exc()
        if self.where == "add_event":

            def add_event(*args: object, **kwargs: object) -> None:
                raise self.exc()

            span.add_event = add_event  # type: ignore[method-assign]  # a span whose events fail

    def on_end(self, span: ReadableSpan) -> None:
        if self.where == "on_end":
            raise self.exc()


def provider(where: str, exc: Callable[[], BaseException] | None = None) -> tuple[TracerProvider, InMemorySpanExporter]:
    """An SDK provider with a working exporter and, after it, a processor raising at `where`."""
    exporter = InMemorySpanExporter()
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    made.add_span_processor(Broken(where) if exc is None else Broken(where, exc))
    return made, exporter


def scenario(calls: list[str]) -> HookRegistry:
    """Hooks of all three styles, one failing under each policy, each recording its call in `calls`."""
    registry = HookRegistry()

    @registry.transform_tool_input
    def add_flag(ctx: PreToolCallDecideContext) -> dict[str, object]:
        calls.append("add_flag")
        return {**ctx.args, "flag": True}

    @registry.pre_tool_call_decide(priority=1)
    def broken_gate(ctx: PreToolCallDecideContext) -> HookResult:
        calls.append("broken_gate")
        if ctx.args.get("command") == "boom":
            raise LookupError("a gate's bug")
        return HookResult.allow()

    @registry.pre_tool_call_decide
    def no_flag(ctx: PreToolCallDecideContext) -> HookResult:
        calls.append("no_flag")
        return HookResult.deny("flagged") if ctx.args.get("flag") else HookResult.allow()

    @registry.permission_denied
    def audit(ctx: object) -> None:
        calls.append("audit")

    @registry.transform_tool_result
    def shorten(ctx: TransformToolResultContext) -> str:
        calls.append("shorten")
        return ctx.presentation[:1]

    @registry.text_delta
    def watch(ctx: TextDeltaContext) -> None:
        calls.append("watch")

    @registry.text_delta(on_error="raise")
    def strict(ctx: TextDeltaContext) -> None:
        calls.append("strict")
        raise ValueError("an observer's bug")

    return registry


def outcome(run: Callable[[], object]) -> object:
    """What `run` returned, or the type and message of what it raised."""
    try:
        return run()
    except Exception as exc:  # noqa: BLE001 -- compared between the two registries
        return type(exc), str(exc)


def dispatches(registry: HookRegistry, surface: str) -> list[object]:
    """Every style dispatched once on `surface`, plus a resolve, and a gate that raises."""
    boom = PreToolCallDecideContext(tool_name="bash", args={"command": "boom"}, call_id="c2")
    if surface == "sync":
        runs: list[Callable[[], object]] = [
            lambda: registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL),
            lambda: registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, boom),
            lambda: registry.transform(HookPoint.TRANSFORM_TOOL_RESULT, RESULT),
            lambda: registry.notify(HookPoint.TEXT_DELTA, DELTA),
            lambda: registry.resolve_tool_call(TOOL),
        ]
        return [outcome(run) for run in runs]
    aruns: list[Callable[[], Any]] = [
        lambda: registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL),
        lambda: registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, boom),
        lambda: registry.atransform(HookPoint.TRANSFORM_TOOL_RESULT, RESULT),
        lambda: registry.anotify(HookPoint.TEXT_DELTA, DELTA),
        lambda: registry.aresolve_tool_call(TOOL),
    ]

    def awaited(run: Callable[[], Any]) -> Callable[[], object]:
        return lambda: asyncio.run(run())

    return [outcome(awaited(run)) for run in aruns]


@pytest.mark.parametrize("surface", ["sync", "async"])
@pytest.mark.parametrize("where", ["on_start", "on_end", "add_event"])
def test_a_raising_span_processor_changes_no_result_no_hook_call_and_no_exception(
    where: str, surface: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Results, the hooks called and the exceptions raised equal an uninstrumented registry's; logged once."""
    plain_calls: list[str] = []
    expected = dispatches(scenario(plain_calls), surface)
    calls: list[str] = []
    registry = scenario(calls)
    made, exporter = provider(where)
    caplog.set_level(logging.WARNING, logger="hookreg")
    with hookreg.otel.instrument(registry, tracer_provider=made):
        got = dispatches(registry, surface)
    assert got == expected
    assert calls == plain_calls
    failed = [record for record in caplog.records if record.getMessage().startswith("otel_failed")]
    assert [record.getMessage() for record in failed] == ["otel_failed exc_type=RuntimeError"]
    assert failed[0].levelno == logging.WARNING
    assert "exporter down" not in caplog.text
    if where != "on_start":  # a span that started still ends (the processor before the broken one saw it)
        assert {span.name for span in exporter.get_finished_spans()} >= {"hookreg pre_tool_call_decide"}


@pytest.mark.parametrize("where", ["on_start", "on_end"])
def test_a_span_processor_s_keyboard_interrupt_still_propagates(where: str) -> None:
    """Only an Exception is telemetry's own failure: a KeyboardInterrupt from a processor reaches the caller."""
    interrupt = KeyboardInterrupt()
    registry = scenario([])
    made, _ = provider(where, lambda: interrupt)
    with hookreg.otel.instrument(registry, tracer_provider=made), pytest.raises(KeyboardInterrupt) as raised:
        registry.notify(HookPoint.TEXT_DELTA, DELTA)
    assert raised.value is interrupt


def test_a_failed_span_leaves_the_current_context_as_it_was() -> None:
    """When a span's end fails, the dispatch's span is no longer current afterwards: the next span is no child."""
    registry = HookRegistry()
    registry.register(HookPoint.TEXT_DELTA, lambda ctx: None, name="watch")
    made, exporter = provider("on_end")
    with hookreg.otel.instrument(registry, tracer_provider=made):
        registry.notify(HookPoint.TEXT_DELTA, DELTA)
        registry.notify(HookPoint.TEXT_DELTA, DELTA)
    first, second = exporter.get_finished_spans()
    assert second.parent is None
    assert first.parent is None


class Slow(SpanProcessor):
    """A span processor that blocks the event loop when each span starts and ends, as a slow exporter would."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        time.sleep(0.3)

    def on_end(self, span: ReadableSpan) -> None:
        time.sleep(0.3)


def test_a_slow_span_processor_never_times_a_hook_out() -> None:
    """Span work is outside a hook's timed region: a hook with a short timeout still decides."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide(timeout=0.1)
    async def quick(ctx: PreToolCallDecideContext) -> HookResult:
        await asyncio.sleep(0)
        return HookResult.deny("judged in time")

    made = TracerProvider()
    made.add_span_processor(Slow())
    with hookreg.otel.instrument(registry, tracer_provider=made):
        result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    assert result.reason == "judged in time"
