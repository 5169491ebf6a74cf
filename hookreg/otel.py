"""OpenTelemetry spans for every dispatch of a registry, through the trace slot (DESIGN §11).

Needs the ``otel`` extra (``pip install 'hookreg[otel]'``), which installs
``opentelemetry-api`` only: spans go wherever the application's tracer
provider sends them (an SDK, Logfire, Langfuse, Phoenix, any OTLP backend).

    >>> import hookreg.otel
    >>> from hookreg import HookRegistry
    >>> registry = HookRegistry()
    >>> with hookreg.otel.instrument(registry) as instrumentation:
    ...     instrumentation.is_instrumented
    True

What a span holds, and what it never holds:

- name ``hookreg <point>`` (``hookreg pre_tool_call_decide``); kind INTERNAL;
  started when the dispatch starts, as a child of the current span, and
  current while the hooks run, so a dispatch made inside a hook is its child
  and a framework's tool or model span is its parent;
- ``hookreg.point``, ``hookreg.style``; on points whose context names a tool,
  ``gen_ai.tool.name`` and ``gen_ai.tool.call.id`` (when it has them);
- when it ends: ``hookreg.hooks`` (the hooks called, in order, by full name);
  at decide points ``hookreg.decision`` (``allow``, ``deny``, ``ask``, or the
  action's kind) and ``hookreg.decided_by`` when a hook decided; at transform
  points ``hookreg.rewritten`` (whether any hook returned a new subject);
- one ``hookreg.hook`` event per hook call, at the time it returned:
  ``hookreg.hook.name``, ``hookreg.hook.outcome`` (the words of
  `registry.trace()`: ``deny``, ``changed``, ``raised``, ``timed out``...),
  ``hookreg.hook.duration_ms``, and ``error.type`` for a call that raised;
- status ERROR, with ``error.type``, when a hook failed (raised, timed out or
  returned what its point does not accept — even when its ``on_error`` let the
  dispatch go on) or the dispatch raised; the description is hookreg's own
  (``hook 'gate' raised ValueError``). A `StopRun` is not an error: the span
  says ``hookreg.stopped_by`` and ``hookreg.reason`` instead.

As in hookreg's logs (DESIGN §7), nothing carries an argument, a result or
an exception's message: only names, outcome words, exception class names, and
the ``reason`` a hook wrote for the model when it denied, asked or stopped
(``hookreg.reason``, the text the ``hook_denied`` and ``run_stopped`` log events
carry). Exceptions are not recorded with `Span.record_exception`, whose event
holds the message and the traceback.

Telemetry never changes a run: a tracer, span processor or exporter raising
an `Exception` costs that span (the dispatch goes on without it), and the
first such failure is logged once per instrumentation as ``otel_failed``
(warning, the exception type only). A `KeyboardInterrupt` or the like still
propagates. Span work happens outside a hook's timed region.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final, TypeAlias, cast, final

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
except ImportError as _import_error:
    _msg = (
        f"Cannot import hookreg.otel: {_import_error.name or 'opentelemetry'} is not installed. "
        "Install it with: pip install 'hookreg[otel]'."
    )
    raise ImportError(_msg, name=_import_error.name) from _import_error

from hookreg._errors import HookReturnError, HookTypeError, HookValueError, StopRun
from hookreg._log import log
from hookreg._points import HookPoint, HookStyle
from hookreg._registry import RegistryCore
from hookreg._results import HookResult
from hookreg._trace import DispatchRecord, HookCall, Watcher, unwatch, watch

if TYPE_CHECKING:
    from contextvars import Token
    from types import TracebackType
    from typing import Self

    from opentelemetry.util.types import AttributeValue

    from hookreg._surface import HookRegistry

__all__ = ["Instrumentation", "instrument"]

_Token: TypeAlias = "tuple[otel_trace.Span, Token[otel_context.Context]]"  # a dispatch's span and context token

_FAILED: Final = frozenset({"raised", "timed out", "bad return"})
_LIVE_LOCK: Final = threading.Lock()
_live: list[Instrumentation] = []  # instrumented now, under _LIVE_LOCK


def instrument(registry: HookRegistry, *, tracer_provider: otel_trace.TracerProvider | None = None) -> Instrumentation:
    """Make every dispatch of `registry`, and of the registries it includes, one OpenTelemetry span.

    Also the dispatches of registries including `registry` (they run its
    hooks), as ``registry.trace()`` sees them; the inclusions are taken as they
    are now. The spans come from `tracer_provider`'s ``"hookreg"`` tracer, or
    the global provider's (a provider set globally later is used once set).
    A registry nothing instruments or traces keeps its inline dispatch loop.

    Raises:
        HookTypeError: `registry` is not a HookRegistry, or `tracer_provider`
            is not a tracer provider.
        HookValueError: `registry` is instrumented already.

    Returns:
        The instrumentation: ``uninstrument()`` it, or use it as a context manager.
    """
    if not isinstance(registry, RegistryCore):
        msg = f"Cannot instrument {registry!r}: only a HookRegistry can be instrumented. Pass the agent's registry."
        raise HookTypeError(msg)
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
        msg = (
            f"Cannot instrument {registry!r} with tracer_provider={tracer_provider!r}: it has no get_tracer(). "
            "Pass an OpenTelemetry TracerProvider, or None for the global one."
        )
        raise HookTypeError(msg)
    tracer = otel_trace.get_tracer("hookreg", tracer_provider=tracer_provider)
    with _LIVE_LOCK:
        for live in _live:
            if live._registry is registry:  # noqa: SLF001 -- own class
                msg = (
                    f"Cannot instrument {registry!r}: it is instrumented already ({live!r}), and a second "
                    "instrumentation would make every span twice. Call uninstrument() on that one first."
                )
                raise HookValueError(msg)
        instrumentation = Instrumentation(registry, tracer)
        _live.append(instrumentation)
        watch(instrumentation, registry, included=True)
    return instrumentation


@final
class Instrumentation(Watcher):
    """A registry's dispatches turned into OpenTelemetry spans; from `instrument`.

    Live until `uninstrument` or the end of its ``with`` block, in every
    thread and task. A dispatch already running when it stops still ends its
    span. Once stopped it stays stopped: call `instrument` again to resume.
    """

    __slots__ = ("_logged", "_registry", "_tracer")

    def __init__(self, registry: RegistryCore, tracer: otel_trace.Tracer) -> None:
        """Use `instrument`: this does not start anything."""
        super().__init__()
        self._registry = registry
        self._tracer = tracer
        self._logged = False  # whether otel_failed was logged: once per instrumentation

    @property
    def is_instrumented(self) -> bool:
        """Whether dispatches still become spans."""
        return self in _live

    def uninstrument(self) -> None:
        """Stop making spans (dispatches under way still end theirs); doing it again does nothing."""
        with _LIVE_LOCK:
            if self in _live:
                _live.remove(self)
                unwatch(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.uninstrument()

    def __repr__(self) -> str:
        state = "instrumented" if self.is_instrumented else "uninstrumented"
        return f"<Instrumentation of {self._registry!r}: {state}>"

    # --- the Watcher interface: called by the trace slot, per dispatch -------------

    def begin(self, point: HookPoint, tool_name: str | None, call_id: str | None) -> object:
        """Start the dispatch's span as a child of the current one, and make it current."""
        attributes: dict[str, AttributeValue] = {"hookreg.point": point.value, "hookreg.style": point.style.value}
        if isinstance(tool_name, str):
            attributes["gen_ai.tool.name"] = tool_name
        if isinstance(call_id, str):
            attributes["gen_ai.tool.call.id"] = call_id
        try:
            span = self._tracer.start_span(f"hookreg {point.value}", attributes=attributes)
            return span, otel_context.attach(otel_trace.set_span_in_context(span))
        except Exception as exc:  # noqa: BLE001 -- telemetry never changes a dispatch (DESIGN §11)
            self._failed(exc)
            return None  # this dispatch goes on without a span

    def call(self, token: object, call: HookCall) -> None:
        """Add the call's ``hookreg.hook`` event to the dispatch's span."""
        if token is None:
            return
        span = cast("_Token", token)[0]
        try:
            if not span.is_recording():
                return
            attributes: dict[str, AttributeValue] = {
                "hookreg.hook.name": call.hook,
                "hookreg.hook.outcome": call.outcome,
                "hookreg.hook.duration_ms": call.duration_ms,
            }
            if call.exc_type is not None:
                attributes["error.type"] = call.exc_type
            span.add_event("hookreg.hook", attributes)
        except Exception as exc:  # noqa: BLE001 -- telemetry never changes a dispatch (DESIGN §11)
            self._failed(exc)

    def end(self, token: object, record: DispatchRecord) -> None:
        """Set what the dispatch did on its span, restore the context it started in, and end the span."""
        if token is None:
            return
        span, context_token = cast("_Token", token)
        try:
            try:
                if span.is_recording():
                    _describe(span, record)
            finally:
                otel_context.detach(context_token)  # first: the caller gets its context back whatever the span does
                span.end()
        except Exception as exc:  # noqa: BLE001 -- telemetry never changes a dispatch (DESIGN §11)
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        """Log the first failure of the tracer, a span, a processor or an exporter; the type only (DESIGN §7)."""
        if not self._logged:
            self._logged = True
            log("warning", "otel_failed", exc_type=type(exc).__name__)


def _describe(span: otel_trace.Span, record: DispatchRecord) -> None:
    """Set `record`'s attributes and status on `span`: names and outcome words only."""
    error, result, style = record.error, record.result, record.point.style
    attributes: dict[str, AttributeValue] = {"hookreg.hooks": record.hooks}
    if isinstance(error, StopRun):  # what run_stopped logs; a StopRun's fields are not checked, so only text
        stop = {"hookreg.stopped_by": error.hook, "hookreg.reason": error.reason}
        attributes.update((key, value) for key, value in stop.items() if isinstance(value, str))
    elif error is None and style is HookStyle.DECIDE:
        attributes["hookreg.decision"] = record.summary
        if record.decided_by is not None:
            attributes["hookreg.decided_by"] = record.decided_by
        if isinstance(result, HookResult) and not result.allowed:  # what hook_denied logs
            attributes["hookreg.reason"] = result.reason
    elif error is None and style is HookStyle.TRANSFORM:
        attributes["hookreg.rewritten"] = record.summary == "changed"
    failed = next((call for call in record.calls if call.outcome in _FAILED), None)
    if failed is not None:
        exc_type = failed.exc_type or HookReturnError.__name__
        how = {
            "raised": f"raised {exc_type}",
            "timed out": "timed out",
            "bad return": f"returned {type(failed.returned).__name__}",
        }[failed.outcome]
        attributes["error.type"] = exc_type
        span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, f"hook {failed.hook!r} {how}"))
    elif error is not None and not isinstance(error, StopRun):
        attributes["error.type"] = type(error).__name__
        span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, f"dispatch raised {type(error).__name__}"))
    span.set_attributes(attributes)
