"""``python -m hookreg demo`` runs a scripted agent end to end; ``python -m hookreg points`` prints the hook points."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    ModelTurnFinishedContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    ToolCallRequest,
    TurnAction,
)
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

__all__ = ["main"]

USAGE = "usage: python -m hookreg {demo|points}"
log: structlog.stdlib.BoundLogger = structlog.get_logger("hookreg.demo")


def points_table() -> str:
    """The hook-point table: decorator, style, context class, and whether ``tools=`` applies."""
    rows = [("point / decorator", "style", "context", "tools=")]
    rows += [(p.value, p.style.value, p.context.__name__, "yes" if p.is_tool_scoped else "") for p in HookPoint]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


@dataclass
class Project:
    """A pretend project directory: file names and contents, nothing touches the disk."""

    files: dict[str, str] = field(
        default_factory=lambda: {"README.md": "# demo", "build.log": "...", "debug.log": "...", "notes.txt": "todo"}
    )

    def shell(self, command: str, timeout: float | None = None) -> str:
        """Run a (pretend) shell command: ``ls`` or ``rm FILE...``."""
        words = command.split()
        if words == ["ls"]:
            return "\n".join(sorted(self.files))
        if words[:1] == ["rm"]:
            for name in words[1:]:
                if name.startswith("-"):
                    continue
                del self.files[name]  # KeyError for a missing file: a tool error
            return f"removed {' '.join(w for w in words[1:] if not w.startswith('-'))}"
        msg = f"unsupported command: {command}"
        raise ValueError(msg)

    def read_file(self, path: str) -> str:
        """Return a file's contents."""
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]


SUMMARY = (
    "Done. I listed the project, deleted build.log and debug.log one by one after rm -rf was refused, "
    "and found that CHANGES.md does not exist, so there was nothing to archive."
)


def demo_registry() -> HookRegistry:
    """The hooks of the demo: a gate, an input transform, an error rewrite, and a truncation policy."""
    registry = HookRegistry()

    @registry.model_turn_finished(priority=10)
    def show_answer(ctx: ModelTurnFinishedContext) -> TurnAction:
        calls = [f"{call.tool_name}({dict(call.args)})" for call in ctx.tool_calls]
        log.info("assistant", text=ctx.text, tool_calls=calls, finish_reason=ctx.finish_reason)
        return TurnAction.continue_run()

    @registry.pre_tool_call_decide(tools="shell", name="no_rm_rf")
    def no_rm_rf(ctx: PreToolCallDecideContext) -> HookResult:
        if "rm -rf" in str(ctx.args.get("command", "")):
            return HookResult.deny("rm -rf is not allowed; delete files one by one")
        return HookResult.allow()

    @registry.transform_tool_input(tools="shell", name="add_timeout")
    def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
        if "timeout" in ctx.args:
            return None
        log.info("input_rewritten", hook="add_timeout", tool=ctx.tool_name, timeout=30.0)
        return {**ctx.args, "timeout": 30.0}

    @registry.permission_denied
    def report_denial(ctx: PermissionDeniedContext) -> None:
        log.warning("tool_denied", tool=ctx.tool_name, by=ctx.decided_by, reason=ctx.reason)

    @registry.on_tool_error(name="explain_missing_file")
    def explain_missing_file(ctx: OnToolErrorContext) -> str | None:
        if not isinstance(ctx.error, FileNotFoundError):
            return None
        message = f"{ctx.args['path']} does not exist; run `ls` to see the files"
        log.info("error_rewritten", hook="explain_missing_file", kind=ctx.kind.value, was=ctx.message, now=message)
        return message

    @registry.model_turn_finished(name="grow_cap_on_truncation")
    def grow_cap_on_truncation(ctx: ModelTurnFinishedContext) -> TurnAction:
        if ctx.finish_reason != "length" or ctx.max_tokens is None:
            return TurnAction.continue_run()
        cap = ctx.max_tokens * 4
        ctx.run.scratchpad.insert(RequestPatch(max_tokens=cap))
        log.info("turn_repeated", hook="grow_cap_on_truncation", max_tokens=ctx.max_tokens, new_max_tokens=cap)
        return TurnAction.repeat()

    @registry.pre_model_call
    def apply_cap(ctx: PreModelCallContext) -> RequestPatch | None:
        return ctx.run.scratchpad.get(RequestPatch)  # the cap grown above, if any

    @registry.post_tool_call
    def show_result(ctx: PostToolCallContext) -> None:
        log.info("tool_result", tool=ctx.tool_name, args=dict(ctx.args), result=ctx.result)

    return registry


def demo() -> None:
    """Run the demo scenario: an agent tidying a project directory, steered by hooks."""
    project = Project()
    model = ScriptedModel(
        [
            ScriptedTurn.calling("shell", {"command": "ls"}, text="Let me see what is in the project."),
            ScriptedTurn.calling("shell", {"command": "rm -rf build.log debug.log"}, text="Removing the logs."),
            ScriptedTurn(
                text="I will delete them one at a time.",
                tool_calls=[
                    ToolCallRequest("", "shell", {"command": "rm build.log"}),
                    ToolCallRequest("", "shell", {"command": "rm debug.log"}),
                ],
            ),
            ScriptedTurn.calling("read_file", {"path": "CHANGES.md"}, text="Checking the changelog."),
            ScriptedTurn(text=SUMMARY),
        ]
    )
    harness = Harness(model, [project.shell, project.read_file], demo_registry(), name="tidy", max_tokens=12)
    goal = "Tidy up the project directory: remove the log files."
    log.info("user", content=goal)
    result = harness.run(goal)
    log.info(
        "run_finished", status=result.outcome.status, model_calls=result.outcome.turns, files=sorted(project.files)
    )


def configure_logging() -> None:
    """Print hookreg's events and the demo's through structlog's console renderer, to stdout."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout, force=True)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.dev.ConsoleRenderer(
                colors=sys.stdout.isatty(), exception_formatter=structlog.dev.plain_traceback
            ),
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command named in `argv` (default: ``sys.argv[1:]``); return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["points"]:
        print(points_table())
        return 0
    if args == ["demo"]:
        configure_logging()
        demo()
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
