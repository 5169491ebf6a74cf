"""A reference agent loop over a credential-free ScriptedModel, firing every hook point in order.

`Harness` runs a `Model` (for instance `ScriptedModel`) with plain-function
tools and a `HookRegistry`, through four entry points with identical hook
semantics: `Harness.run`, `Harness.arun`, `Harness.stream` and `Harness.astream`.
The loop is written once, as a generator of operations (see ``_loop.py``), so
it doubles as a reading guide for embedders.

The order points fire in, for one run::

    setup                       the harness's first run only
    on_session_start
    user_prompt_submit          deny: the run ends "stopped", no model call
    each turn (run.turn = 1, 2, ...; a fresh run.turn_scratchpad each turn):
        pre_turn                deny: the run ends "stopped"
        each attempt (every model call counts against max_turns):
            pre_model_call      merges the RequestPatch (base: active_tools = every tool);
                                its `messages` replace the history for this call only
            model_select        picks the model name
            reasoning_delta, text_delta, tool_call_delta
                                streaming entry points only, as chunks arrive
            model_turn_finished finish_reason (FinishReason), raw_finish_reason, message_id, model;
                                repeat / retry_with_feedback: another attempt
                                (refused when the answer carries tool calls)
        post_turn               the answer is accepted (before its tool calls run, as in
                                every adapter: frameworks have no point after a turn's tools)
        each tool call, in order:
            invalid_tool_call   unknown tool, tool not offered this turn, arguments that are not
                                a JSON object (ModelResponse.raw_arguments) or do not fit the
                                tool's signature: fail, retry, repair, skip or stop
            transform_tool_input, pre_tool_call_decide, permission_denied (on deny)
                                = registry.resolve_tool_call
            notification, on_interaction
                                on ask; no interaction hook = denied
            permission_denied   when the interaction denies
            subagent_start ... the nested run's own points ... subagent_stop
                                for a tool made by Harness.as_tool (depth + 1)
            the tool runs
            post_tool_call_failure, on_tool_error
                                on failure (kind EXCEPTION, NOT_FOUND, INVALID_ARGS, TIMEOUT)
            transform_tool_result, post_tool_call
                                on success
        stop                    only after an answer without tool calls;
                                deny: its reason becomes a user message and the run goes on;
                                ask: on_interaction decides whether to stop
        pre_compact, on_compaction
                                when the run goes on and the history exceeds compact_after
                                (transcript_len in characters, message_count in messages)
    notification                when max_turns runs out (the run ends "failed")
    on_session_end              always: also after StopRun, an error or cancellation

Every rule of the run contract above (the gates, the ask, the tool call's
outcome points, the stop decision, the session end) comes from
``hookreg._lifecycle``, shared with every adapter; a point without hooks may
be skipped without building its context.

Any ``ask`` (from ``user_prompt_submit``, ``pre_turn``, ``pre_tool_call_decide``
or ``stop``) goes through ``notification`` and ``on_interaction`` first.
`StopRun` raised by any hook (or ``InvalidToolCallAction.stop``) ends the run
with outcome ``stopped``, and no tool call is left dangling in
``RunResult.history``: every call of the stopped batch has a tool message —
its result when its tool ran and its hooks finished, ``"Not run: the run was
stopped."`` when it never ran, and ``STOPPED_AFTER_RUN`` when it ran but its
result never passed its hooks (the untransformed result is never shown). An
exception ends the run ``failed`` and propagates; a closed stream or a
cancelled task ends it ``cancelled``. ``on_session_end`` fires in every case,
and a failing ``on_session_end`` observer never replaces the exception (or
cancellation, or Ctrl-C) that is ending the run.
"""

from hookreg.harness._loop import (
    STOPPED_AFTER_RUN,
    Harness,
    HookFailure,
    RunFinished,
    RunResult,
    StreamItem,
    TurnRetried,
)
from hookreg.harness._model import (
    Model,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    ScriptedModel,
    ScriptedTurn,
    ScriptItem,
    TextDelta,
    ToolCallDelta,
)
from hookreg.harness._tools import Tool

__all__ = [
    "STOPPED_AFTER_RUN",
    "Harness",
    "HookFailure",
    "Model",
    "ModelChunk",
    "ModelRequest",
    "ModelResponse",
    "ReasoningDelta",
    "RunFinished",
    "RunResult",
    "ScriptItem",
    "ScriptedModel",
    "ScriptedTurn",
    "StreamItem",
    "TextDelta",
    "Tool",
    "ToolCallDelta",
    "TurnRetried",
]
