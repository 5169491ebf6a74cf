"""The model side of the harness: requests, streamed chunks, the Model protocol and ScriptedModel."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol, TypeAlias, final

from hookreg import HookValueError, Message, ToolCallRequest

__all__ = [
    "Model",
    "ModelChunk",
    "ModelRequest",
    "ModelResponse",
    "ReasoningDelta",
    "ScriptItem",
    "ScriptedModel",
    "ScriptedTurn",
    "TextDelta",
    "ToolCallDelta",
]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One request to a model, built by the harness from the merged `RequestPatch`.

    Attributes:
        model: The model name `model_select` settled on.
        messages: The conversation so far.
        tools: The names of the tools offered (the patch's `active_tools`, else every tool).
        system: The preamble, then the extra context blocks, in order.
        max_tokens: The output cap (the patch's, else the harness's default), or ``None``.
        temperature: The sampling temperature, or ``None``.
        tool_choice: The provider's tool-choice setting, or ``None``.
        params: Provider parameters from the patch's `additional_params`.
    """

    model: str
    messages: tuple[Message, ...]
    tools: tuple[str, ...] = ()
    system: tuple[str, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None
    params: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


@final
@dataclass(frozen=True, slots=True)
class TextDelta:
    """A chunk of answer text, as the model streams it."""

    text: str


@final
@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A chunk of reasoning, as the model streams it."""

    text: str


@final
@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A chunk of a tool call's JSON arguments; `tool_name` is ``None`` after the first chunk."""

    call_id: str
    tool_name: str | None
    args: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """A finished model turn: the last chunk of every model stream.

    Attributes:
        text: The answer text.
        reasoning: The reasoning text.
        tool_calls: The tool calls the model asked for.
        finish_reason: Why the turn ended, in the provider's spelling: ``"stop"``,
            ``"tool_calls"``, ``"length"``, ``"MAX_TOKENS"``... (the harness maps it
            onto `hookreg.FinishReason`).
        usage: Token counts (``input_tokens``, ``output_tokens``).
        raw_arguments: Call id → the arguments exactly as the model sent them, for
            each call whose arguments are not a JSON object (malformed JSON text, a
            list, a number...). Such a call's own `args` are ignored: the harness
            sends it to ``invalid_tool_call`` with ``args={}`` and this value as
            ``raw_args``, and never runs it as is.
        message_id: The provider's id for this answer, or ``None``.
        model: The name of the model that answered, or ``None`` (the harness then
            reports the model it asked for).

    Raises:
        HookValueError: A `raw_arguments` key names no call in `tool_calls`.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    raw_arguments: Mapping[str, object] = field(default_factory=dict)
    message_id: str | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "usage", MappingProxyType(dict(self.usage)))
        object.__setattr__(self, "raw_arguments", _raw_arguments(self, self.raw_arguments, self.tool_calls))


def _raw_arguments(owner: object, raw: Mapping[str, object], calls: Sequence[ToolCallRequest]) -> Mapping[str, object]:
    """A read-only copy of `raw`, refused when a key names no call of `calls`."""
    ids = {call.call_id for call in calls}
    for call_id in raw:
        if not call_id or call_id not in ids:
            msg = (
                f"Cannot build {type(owner).__name__} with raw arguments for call {call_id!r}: no tool call has "
                f"that id (the calls are {sorted(ids)}). Key raw_arguments by the call_id of a call in tool_calls."
            )
            raise HookValueError(msg)
    return MappingProxyType(dict(raw))


ModelChunk: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | ModelResponse
"""What a model stream yields: deltas, then one `ModelResponse`."""


class Model(Protocol):
    """What the harness needs from a model: a name and a stream of chunks ending with a `ModelResponse`."""

    @property
    def name(self) -> str:
        """The default model name, offered to `model_select` hooks."""
        ...

    def stream(self, request: ModelRequest, /) -> Iterator[ModelChunk]:
        """Answer `request`, chunk by chunk, ending with a `ModelResponse` (sync entry points)."""
        ...

    def astream(self, request: ModelRequest, /) -> AsyncIterator[ModelChunk]:
        """Answer `request`, chunk by chunk, ending with a `ModelResponse` (async entry points)."""
        ...


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedTurn:
    """One scripted model turn.

    A scripted token is one whitespace-separated word of `text`. When the
    request's `max_tokens` is below the word count, the turn comes back
    truncated: the first `max_tokens` words, no tool calls, finish reason
    ``"length"`` — and it stays next in the script, so a retry with a larger
    cap gets it whole.

    Attributes:
        text: The answer text.
        reasoning: Reasoning streamed before the text.
        tool_calls: Tool calls; an empty `call_id` is numbered by the model.
        finish_reason: Defaults to ``"tool_calls"`` when there are tool calls, else ``"stop"``.
        usage: Defaults to word counts of the request and the answer.
        raw_arguments: Call id → arguments the model sends as they are, not as a JSON
            object (see `ModelResponse.raw_arguments`); each key must be the
            non-empty `call_id` of a call in `tool_calls`.
        message_id: The answer's id; the model numbers it (``"msg-1"``...) when ``None``.

    Raises:
        HookValueError: A `raw_arguments` key names no call in `tool_calls`.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ToolCallRequest] = ()
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None
    raw_arguments: Mapping[str, object] = field(default_factory=dict)
    message_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "raw_arguments", _raw_arguments(self, self.raw_arguments, self.tool_calls))

    @classmethod
    def calling(cls, tool_name: str, /, args: Mapping[str, object] | None = None, *, text: str = "") -> ScriptedTurn:
        """A turn that calls one tool, optionally saying `text` first.

        Example:
            >>> ScriptedTurn.calling("shell", {"command": "ls"}).tool_calls[0].tool_name
            'shell'
        """
        return cls(text=text, tool_calls=(ToolCallRequest("", tool_name, args or {}),))

    @classmethod
    def calling_raw(cls, tool_name: str, /, raw: object, *, call_id: str = "raw-1", text: str = "") -> ScriptedTurn:
        """A turn that calls one tool with arguments that are not a JSON object (`raw`: text, a list...).

        Example:
            >>> ScriptedTurn.calling_raw("shell", '{"command": "ls').raw_arguments
            mappingproxy({'raw-1': '{"command": "ls'})
        """
        return cls(text=text, tool_calls=(ToolCallRequest(call_id, tool_name, {}),), raw_arguments={call_id: raw})


ScriptItem: TypeAlias = ScriptedTurn | Callable[[ModelRequest], ScriptedTurn]
"""A scripted turn, or a function choosing one from the request."""


def argument_text(call: ToolCallRequest, raw_arguments: Mapping[str, object]) -> str:
    """A call's arguments as the model sent them: its raw text, else JSON."""
    raw = raw_arguments.get(call.call_id, call.args)
    if isinstance(raw, str):
        return raw
    return json.dumps(dict(raw) if isinstance(raw, Mapping) else raw, default=str)


def _words(text: str) -> int:
    return len(text.split())


@final
class ScriptedModel:
    """A credential-free model that answers from a script, one item per model call.

    Each call takes the next item of the script; a callable item is called
    with the request, so a turn may depend on it (the prompt, the cap, the
    tools offered). Every request is kept in `requests`.

    Example:
        >>> model = ScriptedModel([ScriptedTurn(text="hello there")])
        >>> model.respond(ModelRequest(model=model.name, messages=())).text
        'hello there'
    """

    __slots__ = ("_answers", "_calls", "_lock", "_next", "_requests", "_script", "name")

    def __init__(self, script: Iterable[ScriptItem], /, *, name: str = "scripted-model") -> None:
        """Build a model that plays `script`; `name` is offered to `model_select` hooks."""
        self._script: tuple[ScriptItem, ...] = tuple(script)
        self.name: str = name
        self._next = 0
        self._calls = 0
        self._answers = 0
        self._requests: list[ModelRequest] = []
        self._lock = threading.Lock()

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        """Every request received so far, in order."""
        return tuple(self._requests)

    @property
    def remaining(self) -> int:
        """How many script items are left."""
        return len(self._script) - self._next

    def respond(self, request: ModelRequest, /) -> ModelResponse:
        """Answer `request` in one piece with the next turn of the script.

        Raises:
            HookValueError: The script is exhausted.
        """
        with self._lock:
            self._requests.append(request)
            if self._next >= len(self._script):
                msg = (
                    f"Cannot answer request {len(self._requests)} with {self!r}: its script of "
                    f"{len(self._script)} turns is exhausted. Add turns to the script, or lower max_turns."
                )
                raise HookValueError(msg)
            item = self._script[self._next]
            turn = item if isinstance(item, ScriptedTurn) else item(request)
            turn = self._truncated(turn, request.max_tokens)
            if turn.finish_reason != "length":
                self._next += 1
            self._answers += 1
            message_id = turn.message_id or f"msg-{self._answers}"
            calls = []
            for call in turn.tool_calls:
                self._calls += 1
                calls.append(call if call.call_id else replace(call, call_id=f"call-{self._calls}"))
        usage = turn.usage
        if usage is None:
            usage = {
                "input_tokens": sum(_words(m.content) for m in request.messages),
                "output_tokens": _words(turn.text),
            }
        finish = turn.finish_reason or ("tool_calls" if calls else "stop")
        return ModelResponse(
            text=turn.text,
            reasoning=turn.reasoning,
            tool_calls=tuple(calls),
            finish_reason=finish,
            usage=usage,
            raw_arguments=turn.raw_arguments,
            message_id=message_id,
            model=request.model,
        )

    @staticmethod
    def _truncated(turn: ScriptedTurn, max_tokens: int | None) -> ScriptedTurn:
        words = turn.text.split()
        if max_tokens is None or len(words) <= max_tokens:
            return turn
        cut = " ".join(words[:max_tokens])
        return replace(turn, text=cut, tool_calls=(), raw_arguments={}, finish_reason="length")

    def stream(self, request: ModelRequest, /) -> Iterator[ModelChunk]:
        """Answer `request`: reasoning, text and tool-call deltas, then the `ModelResponse`."""
        response = self.respond(request)
        for piece in re.findall(r"\S+\s*|\s+", response.reasoning):
            yield ReasoningDelta(piece)
        for piece in re.findall(r"\S+\s*|\s+", response.text):
            yield TextDelta(piece)
        for call in response.tool_calls:
            args = argument_text(call, response.raw_arguments)
            half = len(args) // 2
            yield ToolCallDelta(call.call_id, call.tool_name, args[:half])
            yield ToolCallDelta(call.call_id, None, args[half:])
        yield response

    async def astream(self, request: ModelRequest, /) -> AsyncIterator[ModelChunk]:
        """The async twin of `stream`."""
        for chunk in self.stream(request):
            yield chunk

    def __repr__(self) -> str:
        return f"ScriptedModel({self.name!r}, {self.remaining} of {len(self._script)} turns left)"
