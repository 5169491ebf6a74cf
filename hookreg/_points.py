"""HookPoint, HookStyle (and its dispatch method names), and THE per-point table every other module reads."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, Literal, final

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
    subject_of,
)
from hookreg._errors import HookValueError
from hookreg._results import HookResult, InvalidToolCallAction, RequestPatch, TurnAction

__all__ = ["POINTS", "HookPoint", "HookStyle", "PointSpec", "unknown_point"]

_SAME: Final = object()  # a column left to follow the one before it
_LABELS: Final[dict[type, str]] = {Mapping: "Mapping[str, object]"}  # how annotations write a generic type


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
        return POINTS[self].style

    @property
    def context(self) -> type[Any]:
        """The context class this point's hooks receive."""
        return POINTS[self].context

    @property
    def is_tool_scoped(self) -> bool:
        """Whether the context has a `tool_name`, so that ``tools=`` applies."""
        return POINTS[self].is_tool_scoped

    @property
    def expected_return(self) -> str:
        """What this point's hooks return, as an annotation writes it (and error messages say it).

        ``"HookResult"``, ``"TurnAction"``, ``"str | None"`` (a transform keeps
        its subject with ``None``), ``"None"`` for an observer.

        Example:
            >>> HookPoint.TRANSFORM_TOOL_INPUT.expected_return
            'Mapping[str, object] | None'
        """
        return POINTS[self].expected

    def is_valid_return(self, value: object, /) -> bool:
        """Whether `value` is a return this point's hooks may make: the check dispatch makes on every hook's return.

        The result types are matched exactly (a subclass is refused); a
        transform's Mapping or str may be any kind of either. A hook returning
        anything else fails as if it raised `HookReturnError`.

        Example:
            >>> HookPoint.PRE_TOOL_CALL_DECIDE.is_valid_return(HookResult.deny("no"))
            True
            >>> HookPoint.PRE_TOOL_CALL_DECIDE.is_valid_return(False)
            False
        """
        return POINTS[self].accepts(value)

    @classmethod
    def _missing_(cls, value: object) -> None:
        """Refuse a string that names no point with the points it may have meant, as registering does."""
        if isinstance(value, str):
            raise unknown_point(value, "make a HookPoint")


def unknown_point(value: str, doing: str) -> HookValueError:
    """Build the error for `value`, a string that names no point, met while `doing` something."""
    import difflib  # noqa: PLC0415 -- only on this error path

    values = [p.value for p in HookPoint]
    close = [v for v in values if value and value in v] or difflib.get_close_matches(value, values)
    hint = f"Did you mean {' or '.join(map(repr, close[:3]))}?" if close else "See `list(HookPoint)`."
    msg = f"Cannot {doing}: {value!r} is not a hook point. {hint}"
    return HookValueError(msg, point=value)


@final
class PointSpec:
    """One row of the per-point table: everything hookreg knows about a point.

    Attributes:
        point: The point.
        style: How its hooks combine.
        context: The context class its hooks receive.
        alias: The name of its callback type (``PreToolCallDecider``).
        is_tool_scoped: Whether the context has a `tool_name`, so that ``tools=`` applies.
        subject: The field its transforms rewrite (declared by the context class), else ``None``.
        returns: The type its hooks return besides ``None`` (``None`` for an observer).
        optional: Whether ``None`` is a valid return besides `returns`.
        passed: The return that passes (the inline loop goes on): ``None``, or a shared allow.
        all_passed: What a decide dispatch returns when every hook that ran passed.
        on_failure: What a failing decider makes its dispatch do under ``on_error="deny"``, toward doing
            less: ``"deny"``; ``"fail"`` (the invalid call); ``"allow"`` (the run stops rather than loops);
            ``"stop"`` (a `StopRun`). ``None`` for the other styles.
        no_hook: What a decide dispatch returns when no hook ran.
        expected: The accepted return, as messages and the surface write it.
        gives: What its dispatch returns, as the surface writes it.
    """

    __slots__ = (
        "alias",
        "all_passed",
        "context",
        "expected",
        "gives",
        "is_tool_scoped",
        "no_hook",
        "on_failure",
        "optional",
        "passed",
        "point",
        "returns",
        "style",
        "subject",
    )

    def __init__(  # noqa: PLR0913 -- one per column of the table
        self,
        point: HookPoint,
        style: HookStyle,
        context: type[Any],
        alias: str,
        returns: type | None = None,
        *,
        passed: object = None,
        all_passed: object = _SAME,
        no_hook: object = _SAME,
        on_failure: Literal["deny", "fail", "allow", "stop"] = "deny",
    ) -> None:
        self.point = point
        self.style = style
        self.context = context
        self.alias = alias
        self.is_tool_scoped = "tool_name" in context.__slots__
        self.subject = subject_of(context) if style is HookStyle.TRANSFORM else None
        self.returns = returns
        # Transforms may keep their subject (None); a decider passing with None (invalid_tool_call) may return it.
        self.optional = style is HookStyle.TRANSFORM or (returns is not None and passed is None)
        self.passed = passed
        self.all_passed = passed if all_passed is _SAME else all_passed
        self.no_hook = self.all_passed if no_hook is _SAME else no_hook
        self.on_failure = on_failure if style is HookStyle.DECIDE else None
        name = "None" if returns is None else _LABELS.get(returns, returns.__name__)
        self.expected = f"{name} | None" if self.optional else name
        self.gives = name

    def accepts(self, value: object) -> bool:
        """Whether `value` is a valid return of this point's hooks.

        The result types are final: a subclass could override what dispatch reads
        (`allowed`, `kind`, `__eq__`), so only the exact type is accepted; a transform's
        Mapping or str is read into a plain value, so any kind of either is.
        """
        if value is None:
            return self.optional or self.returns is None
        kind = self.returns
        if kind is None:
            return False
        return isinstance(value, kind) if kind in _LABELS or kind is str else type(value) is kind

    def __repr__(self) -> str:
        return f"<PointSpec {self.point.value}: {self.style}, {self.context.__name__}>"


_D, _T, _O = HookStyle.DECIDE, HookStyle.TRANSFORM, HookStyle.OBSERVE
_ALLOW = HookResult.allow()
_CONTINUE = TurnAction.continue_run()

POINTS: Final[dict[HookPoint, PointSpec]] = {
    spec.point: spec
    for spec in (
        PointSpec(HookPoint.SETUP, _O, SetupContext, "SetupObserver"),
        PointSpec(HookPoint.ON_SESSION_START, _O, OnSessionStartContext, "SessionStartObserver"),
        PointSpec(
            HookPoint.USER_PROMPT_SUBMIT, _D, UserPromptSubmitContext, "UserPromptDecider", HookResult, passed=_ALLOW
        ),
        PointSpec(HookPoint.PRE_TURN, _D, PreTurnContext, "PreTurnDecider", HookResult, passed=_ALLOW),
        PointSpec(HookPoint.PRE_MODEL_CALL, _T, PreModelCallContext, "ModelRequestPatcher", RequestPatch),
        PointSpec(HookPoint.MODEL_SELECT, _T, ModelSelectContext, "ModelSelector", str),
        PointSpec(HookPoint.TEXT_DELTA, _O, TextDeltaContext, "TextDeltaObserver"),
        PointSpec(HookPoint.REASONING_DELTA, _O, ReasoningDeltaContext, "ReasoningDeltaObserver"),
        PointSpec(HookPoint.TOOL_CALL_DELTA, _O, ToolCallDeltaContext, "ToolCallDeltaObserver"),
        PointSpec(
            HookPoint.MODEL_TURN_FINISHED,
            _D,
            ModelTurnFinishedContext,
            "TurnFinishedDecider",
            TurnAction,
            passed=_CONTINUE,
            on_failure="stop",
        ),
        PointSpec(
            HookPoint.INVALID_TOOL_CALL,
            _D,
            InvalidToolCallContext,
            "InvalidToolCallDecider",
            InvalidToolCallAction,
            all_passed=InvalidToolCallAction.fail(),
            on_failure="fail",
        ),
        PointSpec(HookPoint.TRANSFORM_TOOL_INPUT, _T, PreToolCallDecideContext, "ToolInputTransformer", Mapping),
        PointSpec(
            HookPoint.PRE_TOOL_CALL_DECIDE,
            _D,
            PreToolCallDecideContext,
            "PreToolCallDecider",
            HookResult,
            passed=_ALLOW,
        ),
        PointSpec(HookPoint.PERMISSION_DENIED, _O, PermissionDeniedContext, "PermissionDeniedObserver"),
        PointSpec(HookPoint.POST_TOOL_CALL_FAILURE, _O, PostToolCallFailureContext, "ToolFailureObserver"),
        PointSpec(HookPoint.ON_TOOL_ERROR, _T, OnToolErrorContext, "ToolErrorTransformer", str),
        PointSpec(HookPoint.TRANSFORM_TOOL_RESULT, _T, TransformToolResultContext, "ToolResultTransformer", str),
        PointSpec(HookPoint.POST_TOOL_CALL, _O, PostToolCallContext, "PostToolCallObserver"),
        PointSpec(HookPoint.POST_TURN, _O, PostTurnContext, "PostTurnObserver"),
        PointSpec(HookPoint.PRE_COMPACT, _O, PreCompactContext, "PreCompactObserver"),
        PointSpec(HookPoint.ON_COMPACTION, _O, OnCompactionContext, "CompactionObserver"),
        PointSpec(
            HookPoint.ON_INTERACTION,
            _D,
            OnInteractionContext,
            "InteractionDecider",
            HookResult,
            passed=_ALLOW,
            no_hook=HookResult.deny("no interaction hook"),  # nobody approved the question
        ),
        PointSpec(HookPoint.SUBAGENT_START, _O, SubagentStartContext, "SubagentStartObserver"),
        PointSpec(HookPoint.SUBAGENT_STOP, _O, SubagentStopContext, "SubagentStopObserver"),
        PointSpec(HookPoint.NOTIFICATION, _O, NotificationContext, "NotificationObserver"),
        PointSpec(HookPoint.STOP, _D, StopContext, "StopDecider", HookResult, passed=_ALLOW, on_failure="allow"),
        PointSpec(HookPoint.ON_SESSION_END, _O, OnSessionEndContext, "SessionEndObserver"),
    )
}
"""THE per-point table: one row per point, which everything else reads (dispatch, the generated surface,
`make_context`'s overloads, tracing). A new point is a member above, its context class and one row here."""
