"""OpenTelemetry spans for every hook dispatch of an agent run, printed by the console exporter (offline).

Needs ``pip install 'hookreg[otel]' opentelemetry-sdk``. Any exporter works the
same way (OTLP to Jaeger, Logfire, Langfuse, Phoenix): hookreg only asks the
OpenTelemetry API for a tracer.
"""

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

import hookreg.otel
from hookreg import HookRegistry, HookResult, PostToolCallContext, PreToolCallDecideContext
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn


def one_line(span: ReadableSpan) -> str:
    """The span in one line (the exporter's default formatter prints it all as JSON).

    Every dispatch is a span, also those no hook ran in; this example prints only the others.
    """
    if (span.attributes or {}).get("hookreg.hooks") == ():
        return ""
    attributes = {key: value for key, value in (span.attributes or {}).items() if key != "hookreg.style"}
    hooks = []
    for event in span.events:
        call = dict(event.attributes or {})
        hooks.append(f"{call['hookreg.hook.name']!s}={call['hookreg.hook.outcome']!s}")
    status = f" {span.status.status_code.name}: {span.status.description}" if span.status.description else ""
    return f"{span.name}{status} {attributes} events={hooks}\n"


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(formatter=one_line)))
trace.set_tracer_provider(provider)  # the application's provider; hookreg uses the global one by default

registry = HookRegistry()


@registry.transform_tool_input(tools="shell")
def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
    return {**ctx.args, "timeout": 30}


@registry.pre_tool_call_decide(tools="shell")
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args["command"]):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.post_tool_call
def flaky_audit(ctx: PostToolCallContext) -> None:
    raise ConnectionError(f"audit server down; lost {ctx.args}")  # spans name ConnectionError, never carry this text


def shell(command: str, timeout: int = 5) -> str:
    return f"ran {command!r} with timeout {timeout}"


model = ScriptedModel(
    [
        ScriptedTurn.calling("shell", {"command": "cat ~/.ssh/id_rsa"}),
        ScriptedTurn.calling("shell", {"command": "rm -rf /"}),
        ScriptedTurn(text="done"),
    ]
)
tracer = trace.get_tracer("example")
with hookreg.otel.instrument(registry), tracer.start_as_current_span("agent run"):
    result = Harness(model, [shell], registry).run("tidy up")
print(f"run {result.outcome.status}")
