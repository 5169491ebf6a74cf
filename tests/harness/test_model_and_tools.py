"""ScriptedModel plays its script (truncating under a small cap) and Tool checks arguments against signatures."""

from __future__ import annotations

import asyncio
import functools

import pytest

from hookreg import Message, ToolCallRequest
from hookreg.harness import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ScriptedModel,
    ScriptedTurn,
    TextDelta,
    Tool,
    ToolCallDelta,
)


def request(max_tokens: int | None = None, text: str = "hi") -> ModelRequest:
    """A request with one user message."""
    return ModelRequest(model="m", messages=(Message("user", text),), max_tokens=max_tokens)


def test_a_turn_is_truncated_while_the_cap_is_below_its_length_and_stays_next() -> None:
    """Under a small cap the turn comes back cut with finish reason length, and is served whole once the cap allows."""
    model = ScriptedModel([ScriptedTurn(text="one two three four"), ScriptedTurn(text="next")])
    cut = model.respond(request(max_tokens=2))
    assert (cut.text, cut.finish_reason, cut.usage["output_tokens"]) == ("one two", "length", 2)
    assert model.remaining == 2
    whole = model.respond(request(max_tokens=4))
    assert (whole.text, whole.finish_reason) == ("one two three four", "stop")
    assert model.respond(request()).text == "next"


def test_a_truncated_turn_drops_its_tool_calls() -> None:
    """A cut answer carries no tool calls, as a provider's cut answer would not."""
    model = ScriptedModel([ScriptedTurn.calling("shell", {"command": "ls"}, text="let me look around")])
    assert model.respond(request(max_tokens=1)).tool_calls == ()
    assert model.respond(request()).tool_calls[0].tool_name == "shell"


def test_callable_items_see_the_request() -> None:
    """A callable script item chooses its turn from the request."""
    model = ScriptedModel([lambda req: ScriptedTurn(text=f"you said {req.messages[-1].content}")])
    assert model.respond(request(text="hello")).text == "you said hello"
    assert model.requests[0].messages[-1].content == "hello"


def test_call_ids_are_numbered_and_defaults_filled_in() -> None:
    """Empty call ids are numbered; finish reason and usage default sensibly."""
    model = ScriptedModel([ScriptedTurn.calling("a"), ScriptedTurn(tool_calls=[ToolCallRequest("mine", "b", {})])])
    first, second = model.respond(request()), model.respond(request())
    assert first.tool_calls[0].call_id == "call-1"
    assert second.tool_calls[0].call_id == "mine"
    assert (first.finish_reason, dict(first.usage)) == ("tool_calls", {"input_tokens": 1, "output_tokens": 0})


def test_an_exhausted_script_is_a_clear_error() -> None:
    """Asking past the end of the script says how long it was and what to do."""
    model = ScriptedModel([])
    with pytest.raises(ValueError, match=r"script of 0 turns is exhausted\. Add turns to the script"):
        model.respond(request())


def test_the_stream_carries_reasoning_text_and_tool_call_deltas_then_the_response() -> None:
    """stream() yields reasoning, text and tool-call deltas that rebuild the answer, then the ModelResponse."""
    turn = ScriptedTurn(reasoning="think  hard", text=" a b", tool_calls=[ToolCallRequest("c", "t", {"x": 1})])
    chunks = list(ScriptedModel([turn]).stream(request()))
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)) == "think  hard"
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == " a b"
    calls = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert [c.tool_name for c in calls] == ["t", None]
    assert "".join(c.args for c in calls) == '{"x": 1}'
    assert isinstance(chunks[-1], ModelResponse)


def test_astream_yields_what_stream_yields() -> None:
    """astream() is the async twin of stream()."""

    async def collect() -> list[object]:
        model = ScriptedModel([ScriptedTurn(text="a b")])
        return [chunk async for chunk in model.astream(request())]

    chunks = asyncio.run(collect())
    assert chunks[:2] == [TextDelta("a "), TextDelta("b")]


def shell(command: str, timeout: float = 10.0, *, flags: list[str] | None = None) -> str:
    """A tool with typed parameters."""
    return command


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"command": "ls"}, None),
        ({"command": "ls", "timeout": 5}, None),
        ({"command": 3}, "argument 'command' must be str, not int"),
        ({"command": "ls", "timeout": True}, "argument 'timeout' must be float, not bool"),
        ({}, "missing a required argument: 'command'"),
        ({"command": "ls", "nope": 1}, "got an unexpected keyword argument 'nope'"),
    ],
)
def test_tool_arguments_are_checked_against_the_signature(args: dict[str, object], problem: str | None) -> None:
    """check() binds the arguments to the signature and checks plain-class annotations."""
    assert Tool(shell).check(args) == problem


def test_tool_names_and_kinds() -> None:
    """A tool is named after its function, knows whether it is async, and refuses bad names and timeouts."""

    async def fetch(url: str) -> str:
        return url

    assert (Tool(shell).name, Tool(shell).is_async) == ("shell", False)
    assert Tool(functools.partial(fetch), name="get").is_async
    with pytest.raises(ValueError, match=r"its name '<lambda>' is not an identifier\. Pass name="):
        Tool(lambda: None)
    with pytest.raises(ValueError, match=r"Cannot give tool 'shell' a timeout: it is sync"):
        Tool(shell, timeout=1.0)
    with pytest.raises(ValueError, match=r"the timeout -1: it must be a positive number of seconds"):
        Tool(fetch, timeout=-1)
    with pytest.raises(TypeError, match=r"it is not callable"):
        Tool(3)  # type: ignore[arg-type]  # the mistake under test
