"""Per-run overhead of each adapter: the framework's own offline run, alone and with hookreg attached, in one process.

    python benchmarks/adapters.py            # full run, writes the "In a real framework" part of RESULTS.md
    python benchmarks/adapters.py --quick    # smoke run (CI), writes nothing
    python benchmarks/adapters.py --only strands --rounds 100   # one framework, writes nothing

What a user feels is the cost per run (DESIGN §9 "In a real framework"). Each framework runs one offline agent
run — its own test model asks for one tool call, the tool runs, the model answers — side by side in interleaved
rounds: the framework alone, with hookreg attached and an empty registry, and with a gate, a transform and two
observers; for pydantic-ai, Strands and LangChain also the floor (`FLOORS`): the framework's own extension objects of
hookreg's shape, doing nothing. A round times one run of each variant (garbage collection off during the run, a
collection between runs), so a slow spell on the machine hits all alike; a variant's figure is its median over the
rounds, and hookreg's cost the median of each round's ratio to the framework's own run in that round. Bounds: an
empty registry adds at most 2%, the four hooks at most 5%. With valgrind installed, each framework run in this
process is also counted in instructions (`counted`), which the machine's other load cannot change.

The Claude Agent SDK and Antigravity runs start the framework's own process (the Claude Code CLI, the SDK's
runtime binary) against a fake model server on 127.0.0.1 that the benchmark starts and stops: 0.6 s to 2 s a
run, so they get at most `ROUND_CAP` rounds and no warm-up beyond their first runs. The
``claude-agent-sdk-scripted`` row is the SDK's Python side alone, over a transport playing the CLI: a diagnostic
row (each hook callback is a control-protocol round trip, which the real CLI's run hides), held to no bound.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hookreg import HookRegistry, HookResult, PostToolCallContext, PreToolCallDecideContext

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).with_name("RESULTS.md")
HEADING = "## In a real framework: the cost per run"
BOUNDS = {"empty": 0.02, "hooked": 0.05}

Run = Callable[[], Coroutine[Any, Any, object]]
"""One whole agent run, from the prompt to the final answer."""

SERVERS = contextlib.ExitStack()
"""What a framework's runs use beside the process (a fake model server on 127.0.0.1, a scratch directory): entered
by its build function, closed once that framework is measured."""

ROUND_CAP = {"claude-agent-sdk": 150, "antigravity": 60}
"""At most this many rounds for a framework whose run starts a process (0.6 s to 2 s a run)."""

DIAGNOSTIC = {"claude-agent-sdk-scripted"}
"""Rows that are not a framework's run, so no bound applies: they show where a cost comes from."""


def registries() -> dict[str, HookRegistry | None]:
    """The three variants: no hookreg, an empty registry, a gate + a transform + two observers."""
    hooked = HookRegistry()

    @hooked.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("no") if "rm" in str(ctx.args.get("command", "")) else HookResult.allow()

    @hooked.transform_tool_input
    def transform(ctx: PreToolCallDecideContext) -> None:
        del ctx

    seen: list[str] = []

    @hooked.post_tool_call
    def audit(ctx: PostToolCallContext) -> None:
        seen.append(ctx.tool_name)
        del seen[:]

    @hooked.on_session_end
    def ended(ctx: object) -> None:
        del ctx

    return {"alone": None, "empty": HookRegistry(), "hooked": hooked}


def shell(command: str) -> str:
    """Run a shell command (pretend)."""
    return f"ran {command}"


def pydantic_ai(registry: HookRegistry | None, *, floor: bool = False) -> Run:
    """pydantic-ai: a `FunctionModel` calls the tool once, then answers.

    The floor: two capabilities that do nothing, outermost and innermost, with the methods hookreg's two override.
    """
    from pydantic_ai import Agent, models
    from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from hookreg.adapters.pydantic_ai import hookreg_capability

    models.ALLOW_MODEL_REQUESTS = False

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1]
        if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("shell", {"command": "ls"})])

    class RunPoints(AbstractCapability[Any]):
        def get_ordering(self) -> CapabilityOrdering:
            return CapabilityOrdering(position="outermost")

        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            return await handler()

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            return request_context

        async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
            return response

    class ToolGate(AbstractCapability[Any]):
        def get_ordering(self) -> CapabilityOrdering:
            return CapabilityOrdering(position="innermost")

        async def wrap_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            return await handler(args)

        async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            return args

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            return await handler(args)

    capabilities: list[Any] = [] if registry is None else [hookreg_capability(registry)]
    if floor:
        capabilities = [RunPoints(), ToolGate()]
    agent = Agent(FunctionModel(respond), capabilities=capabilities, tools=[shell])

    async def run() -> object:
        return (await agent.run("list")).output

    return run


def openai_agents(registry: HookRegistry | None) -> Run:
    """OpenAI Agents: the SDK's `ScriptedModel` calls the tool once, then answers."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from hookreg.adapters.openai_agents import guard_tools, hookreg_run_hooks

    set_tracing_disabled(True)
    tool = function_tool(shell)
    hooks = None if registry is None else hookreg_run_hooks(registry)
    tools = [tool] if registry is None else guard_tools([tool], registry)

    async def run() -> object:
        model = ScriptedModel([[function_call("shell", {"command": "ls"}, call_id="c1")], [assistant_message("done")]])
        agent = Agent(name="ops", model=model, tools=list(tools))
        result = await (Runner.run(agent, "list") if hooks is None else hooks.run(agent, "list"))
        return result.final_output

    return run


def strands(registry: HookRegistry | None, *, floor: bool = False) -> Run:
    """Strands: a `Model` that calls the tool once, then answers with what the tool said.

    The floor: a hook provider that does nothing, on the events hookreg's subscribes to, and a tool middleware that
    passes each call on (hookreg adds one once a hook judges tool calls).
    """
    from strands import Agent, tool
    from strands.hooks import (
        AfterInvocationEvent,
        AfterModelCallEvent,
        AfterToolCallEvent,
        BeforeInvocationEvent,
        BeforeModelCallEvent,
        BeforeToolCallEvent,
        HookProvider,
    )
    from strands.models import Model
    from strands.types.content import Messages
    from strands.types.streaming import StreamEvent

    from hookreg.adapters.strands import HookregProvider

    class OneCall(Model):
        def update_config(self, **model_config: Any) -> None:
            del model_config

        def get_config(self) -> Any:
            return {}

        def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
            done = any("toolResult" in block for block in messages[-1]["content"])
            yield {"messageStart": {"role": "assistant"}}
            if done:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": "done"}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
                return
            start = {"toolUse": {"toolUseId": "c1", "name": "shell"}}
            yield {"contentBlockStart": {"start": start}}  # type: ignore[typeddict-item]  # Strands' own shape
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"command": "ls"}'}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}

    class Provider(HookProvider):
        def register_hooks(self, registry: Any, **kwargs: Any) -> None:
            for event in (
                BeforeInvocationEvent,
                BeforeModelCallEvent,
                AfterModelCallEvent,
                BeforeToolCallEvent,
                AfterToolCallEvent,
                AfterInvocationEvent,
                AfterInvocationEvent,  # hookreg's provider has two callbacks here
            ):
                registry.add_callback(event, self.nothing)

        async def nothing(self, event: object) -> None:
            del event

    hooks: list[Any] = [] if registry is None else [HookregProvider(registry)]
    agent = Agent(model=OneCall(), tools=[tool(shell)], hooks=[Provider()] if floor else hooks, callback_handler=None)
    if floor:
        from strands.middleware import ExecuteToolStage

        agent.add_middleware(ExecuteToolStage, lambda context, next_fn: next_fn(context))

    async def run() -> object:
        agent.messages = []
        return str(await agent.invoke_async("list"))

    return run


def langchain(registry: HookRegistry | None, *, floor: bool = False) -> Run:
    """LangChain: a fake chat model calls the tool once, then answers; one compiled agent serves every run.

    The floor: a middleware that does nothing, wrapping the model call and the tool call as hookreg's does (its
    async layers plain methods returning the handler's coroutine, which LangSmith's tracing wraps inline).
    """
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from hookreg.adapters.langchain import HookregMiddleware

    class OneCall(GenericFakeChatModel):
        def bind_tools(self, tools: Sequence[object], **kwargs: object) -> OneCall:
            del tools, kwargs
            return self

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            if isinstance(messages[-1], ToolMessage):
                answer = AIMessage(content="done")
            else:
                answer = AIMessage(content="", tool_calls=[{"name": "shell", "args": {"command": "ls"}, "id": "c1"}])
            return ChatResult(generations=[ChatGeneration(message=answer)])

        async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            return self._generate(messages)

    class Wrapping(AgentMiddleware[Any, Any, Any]):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        def awrap_model_call(self, request: Any, handler: Any) -> Any:  # its coroutine, as hookreg's (no thread hop)
            return handler(request)

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

    middleware: list[Any] = [] if registry is None else HookregMiddleware(registry).around([])
    if floor:
        middleware = [Wrapping()]
    agent = create_agent(OneCall(messages=iter(())), tools=[tool(shell)], middleware=middleware)

    async def run() -> object:
        state = await agent.ainvoke({"messages": [HumanMessage(content="list")]})
        return state["messages"][-1].content

    return run


def claude_agent_sdk(registry: HookRegistry | None) -> Run:
    """Claude Agent SDK: `query` runs the pinned Claude Code CLI against the fake Messages API on 127.0.0.1.

    The framework's own offline run: the CLI (``claude``, the version the Claude Code conformance suite pins, in
    ``.cache/claude-code``) streams its requests to the suite's fake Messages API, whose scripted model calls Bash
    once, then answers; the Bash tool records the command instead of running it. Each run starts the CLI afresh.
    """
    sys.path.insert(0, str(ROOT / "tests"))
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    from external.claude_code.cli import _OFFLINE, Project, _fake_bash, find_cli
    from external.claude_code.fake_api import FakeMessagesAPI, ModelCall, ModelTurn

    from hookreg.adapters.claude_agent_sdk import HookregHooks

    cli, why = find_cli()
    if cli is None:
        raise RuntimeError(why)
    project = Project(Path(SERVERS.enter_context(tempfile.TemporaryDirectory())))
    project.dir.mkdir(parents=True)
    (project.root / "home").mkdir()
    call = ModelCall("Bash", {"command": "ls", "description": "list"}, "toolu_1")
    api = SERVERS.enter_context(FakeMessagesAPI([ModelTurn(calls=[call]), ModelTurn(text="done")]))
    env = {
        "HOME": str(project.root / "home"),
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-offline-test",
        "CLAUDE_CODE_SHELL": str(_fake_bash(project)),
        "RECORD_BASH_LOG": str(project.bash_log),
        **_OFFLINE,
    }
    options = ClaudeAgentOptions(
        cli_path=cli, cwd=str(project.dir), env=env, permission_mode="bypassPermissions", setting_sources=[]
    )
    hooks = None if registry is None else HookregHooks(registry)

    async def run() -> object:
        messages = (
            query(prompt="list", options=options) if hooks is None else hooks.query(prompt="list", options=options)
        )
        return [m.result for m in [m async for m in messages] if isinstance(m, ResultMessage)]

    return run


def claude_agent_sdk_scripted(registry: HookRegistry | None) -> Run:
    """Claude Agent SDK's Python side alone: `query` over a transport playing the CLI (one tool call, then the answer).

    Not the framework's run (that is `claude_agent_sdk`, the real CLI): this row isolates what hookreg adds in
    Python, its callbacks answered over the control protocol. The scripted transport asks each registered hook
    callback as the CLI would, runs the tool unless a PreToolUse callback denied it, and reports the result.
    """
    import json

    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    from claude_agent_sdk._internal.transport import Transport

    from hookreg.adapters.claude_agent_sdk import HookregHooks

    call = {"command": "ls"}

    class ScriptedCli(Transport):
        def __init__(self) -> None:
            self.out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
            self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
            self.callbacks: dict[str, list[str]] = {}
            self.task: asyncio.Task[None] | None = None

        async def connect(self) -> None:
            return None

        def is_ready(self) -> bool:
            return True

        async def end_input(self) -> None:
            return None

        async def close(self) -> None:
            await self.out.put(None)

        async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
            while (message := await self.out.get()) is not None:
                yield message

        async def write(self, data: str) -> None:
            message = json.loads(data)
            if message["type"] == "control_response":
                answer = message["response"]
                self.pending.pop(answer["request_id"]).set_result(answer.get("response") or {})
            elif message["type"] == "control_request":  # initialize: note the callbacks of each event
                for event, matchers in (message["request"].get("hooks") or {}).items():
                    self.callbacks[event] = [i for m in matchers for i in m["hookCallbackIds"]]
                response = {"subtype": "success", "request_id": message["request_id"]}
                response["response"] = {"hook_on_failure_supported": True}
                await self.out.put({"type": "control_response", "response": response})
            elif message["type"] == "user":
                self.task = asyncio.ensure_future(self.play())

        async def hook(self, event: str, data: dict[str, Any]) -> list[dict[str, Any]]:
            answers = []
            for n, callback_id in enumerate(self.callbacks.get(event, ())):
                request_id = f"cli_{event}_{n}"
                self.pending[request_id] = asyncio.get_running_loop().create_future()
                request: dict[str, Any] = {"subtype": "hook_callback", "callback_id": callback_id, "tool_use_id": "c1"}
                request["input"] = {"session_id": "s", "hook_event_name": event, **data}
                await self.out.put({"type": "control_request", "request_id": request_id, "request": request})
                answers.append(await self.pending[request_id])
            return answers

        async def play(self) -> None:
            use = {"type": "tool_use", "id": "c1", "name": "Bash", "input": call}
            await self.out.put({"type": "assistant", "message": {"role": "assistant", "content": [use], "model": "m"}})
            tool = {"tool_name": "Bash", "tool_input": call, "tool_use_id": "c1"}
            outputs = [a.get("hookSpecificOutput", {}) for a in await self.hook("PreToolUse", tool)]
            denied = [o["permissionDecisionReason"] for o in outputs if o.get("permissionDecision") == "deny"]
            text = (
                denied[0]
                if denied
                else shell(**next((o["updatedInput"] for o in outputs if "updatedInput" in o), call))
            )
            result = {"type": "tool_result", "tool_use_id": "c1", "content": text}
            await self.out.put({"type": "user", "message": {"role": "user", "content": [result]}})
            await self.hook("PostToolUse", {**tool, "tool_response": {"stdout": text, "stderr": ""}})
            await self.hook("PostToolBatch", {})
            answer = {"role": "assistant", "content": [{"type": "text", "text": "done"}], "model": "m"}
            await self.out.put({"type": "assistant", "message": answer})
            await self.hook("Stop", {"stop_hook_active": False, "last_assistant_message": "done"})
            await self.out.put(
                {
                    "type": "result",
                    "subtype": "success",
                    "duration_ms": 1,
                    "duration_api_ms": 1,
                    "is_error": False,
                    "num_turns": 2,
                    "session_id": "s",
                    "result": text,
                }
            )
            await self.out.put(None)  # the CLI exits after its result

    hooks = None if registry is None else HookregHooks(registry)

    async def run() -> object:
        options = ClaudeAgentOptions()
        if hooks is None:
            messages = query(prompt="list", options=options, transport=ScriptedCli())
        else:
            messages = hooks.query(prompt="list", options=options, transport=ScriptedCli())
        return [m.result for m in [m async for m in messages] if isinstance(m, ResultMessage)]

    return run


def antigravity(registry: HookRegistry | None) -> Run:
    """Antigravity: the SDK's local runtime against a fake OpenAI-compatible server on 127.0.0.1.

    The framework's own offline run, as the adapter's end-to-end test drives it: each run opens an agent session
    (the SDK starts its runtime binary), whose model, served by the scripted chat-completions server of the adapter
    tests, calls the tool once, then answers. ``policies`` are set alike in every variant: the SDK needs one for a
    config carrying hookreg's gate.
    """
    sys.path.insert(0, str(ROOT / "tests" / "adapters"))
    from antigravity_fake import FakeModel, serve, text, tool_call
    from google.antigravity import Agent, LocalOpenAIAgentConfig
    from google.antigravity.hooks import policy

    from hookreg.adapters.antigravity import with_hookreg

    model = SERVERS.enter_context(serve(FakeModel([])))
    config = LocalOpenAIAgentConfig(model="fake", base_url=model.base_url, tools=[shell], policies=[policy.allow_all()])
    wired = config if registry is None else with_hookreg(config, registry)

    async def run() -> object:
        model.script[:] = [tool_call("shell", {"command": "ls"}, "c1"), text("done")]
        model.requests.clear()
        async with Agent(wired) as agent:
            response = await agent.chat("list")
            return await response.text()

    return run


def google_adk(registry: HookRegistry | None) -> Run:
    """Google ADK: a scripted `BaseLlm` calls the tool once, then answers; an `InMemoryRunner` runs the app."""
    import logging
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from hookreg.adapters.google_adk import HookregPlugin

    logging.getLogger("google_adk").setLevel(logging.ERROR)  # the scripted model reports no token usage

    class OneCall(BaseLlm):
        model: str = "one-call"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            del stream
            if any(part.function_response for part in llm_request.contents[-1].parts or ()):
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))
            else:
                call = types.FunctionCall(name="shell", args={"command": "ls"}, id="c1")
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))

    plugins: list[BasePlugin] = [] if registry is None else [HookregPlugin(registry)]
    agent = LlmAgent(name="ops", model=OneCall(), tools=[shell])
    runner = InMemoryRunner(app=App(name="bench", root_agent=agent, plugins=plugins))
    message = types.Content(role="user", parts=[types.Part(text="list")])

    async def run() -> object:
        session = await runner.session_service.create_session(app_name="bench", user_id="u")
        texts = [
            part.text
            async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message)
            for part in (event.content.parts or () if event.content else ())
            if part.text
        ]
        return texts[-1]

    return run


FRAMEWORKS: dict[str, Callable[[HookRegistry | None], Run]] = {
    "pydantic-ai": pydantic_ai,
    "openai-agents": openai_agents,
    "strands": strands,
    "langchain": langchain,
    "claude-agent-sdk": claude_agent_sdk,
    "claude-agent-sdk-scripted": claude_agent_sdk_scripted,
    "google-adk": google_adk,
    "antigravity": antigravity,
}

FLOORS: dict[str, Callable[[], Run]] = {
    "pydantic-ai": lambda: pydantic_ai(None, floor=True),
    "strands": lambda: strands(None, floor=True),
    "langchain": lambda: langchain(None, floor=True),
}
"""The floor of a framework: its own extension objects, subscribed where hookreg's adapter is with the four hooks,
doing nothing. What the framework charges for any extension of that shape, below which no adapter's cost goes."""


def measure(rounds: int, names: Sequence[str]) -> dict[str, dict[str, float]]:
    """µs per run of the three variants of each framework in `names` (median over interleaved rounds)."""
    loop = asyncio.new_event_loop()
    figures: dict[str, dict[str, float]] = {}
    for name in names:
        with SERVERS:  # each framework's servers stop once it is measured
            figures[name] = _measure(loop, name, min(rounds, ROUND_CAP.get(name, rounds)))
    loop.close()
    return figures


def builds(name: str) -> dict[str, Run]:
    """The variants of framework `name`, each built once: alone, the floor (where measured), empty, hooked."""
    runs = {variant: FRAMEWORKS[name](registry) for variant, registry in registries().items()}
    if name in FLOORS:
        runs["floor"] = FLOORS[name]()
    return runs


def _measure(loop: asyncio.AbstractEventLoop, name: str, rounds: int) -> dict[str, float]:
    """µs per run of the variants of one framework, and the rounds measured."""
    runs = builds(name)
    outputs = {variant: loop.run_until_complete(run()) for variant, run in runs.items()}
    if len(set(map(str, outputs.values()))) != 1:
        msg = f"Cannot compare {name}'s runs: they answered differently ({outputs}). Fix the benchmark's runs."
        raise RuntimeError(msg)
    # Warm-up: imports, caches, first-call paths (a run that starts a process is warm after the runs above).
    for _ in range(0 if name in ROUND_CAP else max(3, rounds // 10)):
        for run in runs.values():
            loop.run_until_complete(run())
    samples: dict[str, list[float]] = {variant: [] for variant in runs}
    for _ in range(rounds):
        for variant, run in runs.items():
            gc.collect()
            gc.disable()
            start = time.perf_counter_ns()
            loop.run_until_complete(run())
            samples[variant].append((time.perf_counter_ns() - start) / 1000)
            gc.enable()
    # a variant's cost: the median over rounds of its run against the framework's own run in the same round
    # (paired, so a slow spell on the machine, or a slow start of a framework's process, cancels out)
    added = {
        f"{variant} added": statistics.median(t / a - 1 for t, a in zip(times, samples["alone"], strict=True))
        for variant, times in samples.items()
        if variant != "alone"
    }
    return {"rounds": rounds, **{variant: statistics.median(times) for variant, times in samples.items()}, **added}


NOTES = [
    "Where the misses come from (each adapter's docs page has the count): pydantic-ai calls every hook method of"
    " every capability at each step and copies its run context for each, so its floor alone is past the hooked"
    " bound; LangChain composes every middleware's layers into every model and tool call, so its floor alone is past"
    " the empty bound; over Strands' short run the miss is hookreg's own flows for the four hooks, Strands' charge"
    " for the shape being small. A timed row of a run this short swings by a few percent from one run of the"
    " benchmark to the next; a counted one by up to 2%. The `claude-agent-sdk-scripted` row is a diagnostic, held"
    " to no bound: the SDK's Python side over a transport playing the CLI, where each hook callback is a"
    " control-protocol round trip that the real CLI's run hides.",
]
"""The text under the table (it is rewritten with it)."""


COUNTED_RUNS = 10
"""Runs counted per variant, beyond the warm-up that both of its processes run."""


def counted(names: Sequence[str]) -> dict[str, dict[str, float]]:
    """Thousands of instructions per run of each variant (callgrind), for the frameworks run in this process.

    A second measure, immune to the machine's other load: a variant's count is that of a process running
    `COUNTED_RUNS` runs after the warm-up, less that of the same process running none. The frameworks whose run
    starts a process of their own (`ROUND_CAP`) are not counted: their cost is in that process. Without valgrind,
    nothing is counted.
    """
    if shutil.which("valgrind") is None:
        return {}
    from dispatch import instructions

    jobs = [(name, variant) for name in names if name not in ROUND_CAP for variant in builds(name)]

    def per_run(job: tuple[str, str]) -> float:
        script = (__file__, "--count", *job)
        return (
            (instructions(cache, *script, str(COUNTED_RUNS)) - instructions(cache, *script, "0")) / COUNTED_RUNS / 1000
        )

    with tempfile.TemporaryDirectory() as cache, ThreadPoolExecutor(2) as pool:  # counts ignore the machine's load
        counts = dict(zip(jobs, pool.map(per_run, jobs), strict=True))
    figures: dict[str, dict[str, float]] = {}
    for (name, variant), n in counts.items():
        figures.setdefault(name, {})[variant] = n
    for figure in figures.values():
        figure.update(
            {f"{variant} added": n / figure["alone"] - 1 for variant, n in figure.items() if variant != "alone"}
        )
    return figures


def count(name: str, variant: str, runs: int) -> None:
    """Run `runs` runs of one variant after a warm-up, for callgrind to count (``--count``)."""
    loop = asyncio.new_event_loop()
    run = builds(name)[variant]
    for _ in range(20):
        loop.run_until_complete(run())
    gc.collect()
    gc.disable()
    for _ in range(runs):
        loop.run_until_complete(run())


def table(figures: dict[str, dict[str, float]], rounds: int, counts: dict[str, dict[str, float]]) -> str:
    """The Markdown section RESULTS.md gets: the timed figures, and the counted ones when there are."""
    versions = []
    for distribution in (
        "pydantic-ai-slim",
        "openai-agents",
        "strands-agents",
        "langchain",
        "langgraph",
        "claude-agent-sdk",
        "google-adk",
        "google-antigravity",
    ):
        from importlib.metadata import version

        versions.append(f"{distribution} {version(distribution)}")
    lines = [
        HEADING,
        "",
        f"Written by `python benchmarks/adapters.py` ({rounds} interleaved rounds, fewer for a framework whose run "
        f"starts a process; see its docstring). CPython "
        f"{platform.python_version()}; {', '.join(versions)}.",
        "",
        "One offline run (the framework's test model asks for one tool call, then answers), µs per run, median;"
        " hookreg's cost as a share of the framework's run (the median of each round's ratio to the framework's"
        " run in that round), against DESIGN §9's bounds (empty registry ≤ 2%; a gate, a transform and two"
        " observers ≤ 5%). The floor, where measured: the framework's own extension objects, subscribed where"
        " hookreg's adapter is with the four hooks and doing nothing (what the framework charges any extension of"
        " that shape, below which no adapter's cost goes):",
        "",
        "| framework | rounds | alone | floor | + | empty registry | + | gate, transform, 2 observers | + |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    lines += [f"| {name} | {figure['rounds']:.0f} | " + _cells(name, figure) for name, figure in figures.items()]
    if counts:
        lines += [
            "",
            "Counted in instructions per run (callgrind, the hash seed fixed: the machine's other load does not"
            f" change a count), thousands, {COUNTED_RUNS} runs after the warm-up, for each framework run in this"
            " process:",
            "",
            "| framework | alone | floor | + | empty registry | + | gate, transform, 2 observers | + |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        lines += [f"| {name} | " + _cells(name, figure) for name, figure in counts.items()]
    return "\n".join([*lines, "", *NOTES]) + "\n"


def _cells(name: str, figure: dict[str, float]) -> str:
    """A row's cells from the framework's own run on: each variant's figure and its share over that run."""
    cells = [f"{figure['alone']:,.0f}"]
    cells += [f"{figure['floor']:,.0f}", f"{figure['floor added']:+.1%}"] if "floor" in figure else ["", ""]
    for variant in ("empty", "hooked"):
        added = figure[f"{variant} added"]
        verdict = "diagnostic" if name in DIAGNOSTIC else "met" if added <= BOUNDS[variant] else "missed"
        cells += [f"{figure[variant]:,.0f}", f"{added:+.1%} ({verdict})"]
    return " | ".join(cells) + " |"


SECTION = re.compile(rf"^{re.escape(HEADING)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
"""This benchmark's section of RESULTS.md (`benchmarks/dispatch.py` keeps it when it rewrites the rest)."""


def write(section: str) -> None:
    """Replace (or append) this benchmark's section of RESULTS.md, leaving the rest as it is."""
    text = RESULTS.read_text(encoding="utf-8")
    text = SECTION.sub(section + "\n", text) if SECTION.search(text) else text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every adapter's per-run cost; write RESULTS.md unless ``--quick``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run that writes nothing")
    parser.add_argument("--rounds", type=int, default=400, help="interleaved rounds per framework")
    parser.add_argument(
        "--only", action="append", choices=sorted(FRAMEWORKS), help="measure this framework only (writes nothing)"
    )
    parser.add_argument("--count", nargs=3, metavar=("FRAMEWORK", "VARIANT", "RUNS"), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.count:  # one process for callgrind to count (`counted`)
        count(options.count[0], options.count[1], int(options.count[2]))
        return 0
    rounds = 3 if options.quick else options.rounds
    names = options.only or list(FRAMEWORKS)
    section = table(measure(rounds, names), rounds, {} if options.quick else counted(names))
    sys.stdout.write(section)
    if not options.quick and not options.only:
        write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
