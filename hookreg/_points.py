"""HookPoint, HookStyle and the table saying each point's style and context class."""

from __future__ import annotations

import enum
from dataclasses import fields
from typing import Any

from hookreg._context import (
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    NotificationContext,
    OnCompactionContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PostTurnContext,
    PreCompactContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    ReasoningDeltaContext,
    SetupContext,
    StopContext,
    SubagentStartContext,
    SubagentStopContext,
    TextDeltaContext,
    ToolCallDeltaContext,
    TransformToolResultContext,
    UserPromptSubmitContext,
)

__all__ = ["HookPoint", "HookStyle"]


class HookStyle(enum.StrEnum):
    """How a point's hooks combine."""

    DECIDE = "decide"
    """Gates: the first result that is not a pass wins."""
    TRANSFORM = "transform"
    """Rewrites: each hook sees the previous result; ``None`` keeps it."""
    OBSERVE = "observe"
    """Observers: all run, and return ``None``."""

    @property
    def method(self) -> str:
        """The name of the registry method dispatching this style: ``decide``, ``transform`` or ``notify``."""
        return "notify" if self is HookStyle.OBSERVE else self.value

    @property
    def amethod(self) -> str:
        """The name of its async twin: ``adecide``, ``atransform`` or ``anotify``."""
        return "a" + self.method


class HookPoint(enum.StrEnum):
    """A moment in the agent loop; its value is the name of its registration decorator."""

    # Hash like the value string, in C: Enum's own __hash__ is Python code, and
    # every dispatch looks its point up in a dict.
    __hash__ = str.__hash__

    SETUP = "setup"
    ON_SESSION_START = "on_session_start"
    USER_PROMPT_SUBMIT = "user_prompt_submit"
    PRE_TURN = "pre_turn"
    PRE_MODEL_CALL = "pre_model_call"
    MODEL_SELECT = "model_select"
    TEXT_DELTA = "text_delta"
    REASONING_DELTA = "reasoning_delta"
    TOOL_CALL_DELTA = "tool_call_delta"
    MODEL_TURN_FINISHED = "model_turn_finished"
    INVALID_TOOL_CALL = "invalid_tool_call"
    TRANSFORM_TOOL_INPUT = "transform_tool_input"
    PRE_TOOL_CALL_DECIDE = "pre_tool_call_decide"
    PERMISSION_DENIED = "permission_denied"
    POST_TOOL_CALL_FAILURE = "post_tool_call_failure"
    ON_TOOL_ERROR = "on_tool_error"
    TRANSFORM_TOOL_RESULT = "transform_tool_result"
    POST_TOOL_CALL = "post_tool_call"
    POST_TURN = "post_turn"
    PRE_COMPACT = "pre_compact"
    ON_COMPACTION = "on_compaction"
    ON_INTERACTION = "on_interaction"
    SUBAGENT_START = "subagent_start"
    SUBAGENT_STOP = "subagent_stop"
    NOTIFICATION = "notification"
    STOP = "stop"
    ON_SESSION_END = "on_session_end"

    @property
    def style(self) -> HookStyle:
        """How this point's hooks combine."""
        return _TABLE[self][0]

    @property
    def context(self) -> type[Any]:
        """The context class this point's hooks receive."""
        return _TABLE[self][1]

    @property
    def is_tool_scoped(self) -> bool:
        """Whether the context has a `tool_name`, so that ``tools=`` applies."""
        return _TABLE[self][2]


_D, _T, _O = HookStyle.DECIDE, HookStyle.TRANSFORM, HookStyle.OBSERVE
_STYLES_AND_CONTEXTS: dict[HookPoint, tuple[HookStyle, type[Any]]] = {
    HookPoint.SETUP: (_O, SetupContext),
    HookPoint.ON_SESSION_START: (_O, OnSessionStartContext),
    HookPoint.USER_PROMPT_SUBMIT: (_D, UserPromptSubmitContext),
    HookPoint.PRE_TURN: (_D, PreTurnContext),
    HookPoint.PRE_MODEL_CALL: (_T, PreModelCallContext),
    HookPoint.MODEL_SELECT: (_T, ModelSelectContext),
    HookPoint.TEXT_DELTA: (_O, TextDeltaContext),
    HookPoint.REASONING_DELTA: (_O, ReasoningDeltaContext),
    HookPoint.TOOL_CALL_DELTA: (_O, ToolCallDeltaContext),
    HookPoint.MODEL_TURN_FINISHED: (_D, ModelTurnFinishedContext),
    HookPoint.INVALID_TOOL_CALL: (_D, InvalidToolCallContext),
    HookPoint.TRANSFORM_TOOL_INPUT: (_T, PreToolCallDecideContext),
    HookPoint.PRE_TOOL_CALL_DECIDE: (_D, PreToolCallDecideContext),
    HookPoint.PERMISSION_DENIED: (_O, PermissionDeniedContext),
    HookPoint.POST_TOOL_CALL_FAILURE: (_O, PostToolCallFailureContext),
    HookPoint.ON_TOOL_ERROR: (_T, OnToolErrorContext),
    HookPoint.TRANSFORM_TOOL_RESULT: (_T, TransformToolResultContext),
    HookPoint.POST_TOOL_CALL: (_O, PostToolCallContext),
    HookPoint.POST_TURN: (_O, PostTurnContext),
    HookPoint.PRE_COMPACT: (_O, PreCompactContext),
    HookPoint.ON_COMPACTION: (_O, OnCompactionContext),
    HookPoint.ON_INTERACTION: (_D, OnInteractionContext),
    HookPoint.SUBAGENT_START: (_O, SubagentStartContext),
    HookPoint.SUBAGENT_STOP: (_O, SubagentStopContext),
    HookPoint.NOTIFICATION: (_O, NotificationContext),
    HookPoint.STOP: (_D, StopContext),
    HookPoint.ON_SESSION_END: (_O, OnSessionEndContext),
}
_TABLE: dict[HookPoint, tuple[HookStyle, type[Any], bool]] = {
    point: (style, context, any(f.name == "tool_name" for f in fields(context)))
    for point, (style, context) in _STYLES_AND_CONTEXTS.items()
}
