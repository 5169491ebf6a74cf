"""``python -m hookreg``: ``demo`` runs a scripted agent steered by hooks; ``points`` prints the hook points."""

from __future__ import annotations

import argparse
import inspect
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

import hookreg
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

# How the demo's own lines and hookreg's log events look apart: the demo prints "role │ text",
# hookreg's events come through a handler the demo puts on the "hookreg" logger for the run.
LIBRARY_FORMAT = "  [hookreg %(levelname)s] %(message)s"
PASSING = "a decider passes with HookResult.allow() (TurnAction.continue_run() at model_turn_finished, None at "
PASSING += "invalid_tool_call); a transform keeps its subject with None; an observer returns None"


def hookreg_version() -> str:
    """The installed distribution's version, else the package's ``__version__``, else ``"unknown"``."""
    try:
        return version("hookreg")
    except PackageNotFoundError:
        return str(getattr(hookreg, "__version__", "unknown"))


def points_table() -> str:
    """The hook-point table: decorator, style, context class, whether ``tools=`` applies, and what hooks return."""
    rows = [("point / decorator", "style", "context", "tools=", "hooks return")]
    rows += [
        (p.value, p.style.value, p.context.__name__, "yes" if p.is_tool_scoped else "", p.expected_return)
        for p in HookPoint
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join([*lines, "", f"To pass: {PASSING}."])


def say(role: str, text: str) -> None:
    """Print one line of the demo's own narration: who speaks, then what."""
    print(f"{role:>9} │ {text}")


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
    """The hooks of the demo: a gate, an input transform, an error rewrite, a truncation policy, and narration."""
    registry = HookRegistry()

    @registry.model_turn_finished(priority=10)
    def show_answer(ctx: ModelTurnFinishedContext) -> TurnAction:
        """Narrates each answer of the model."""
        calls = ", ".join(f"{call.tool_name}({dict(call.args)})" for call in ctx.tool_calls)
        say("assistant", f"{ctx.text}" + (f"  -> {calls}" if calls else "") + f"  [{ctx.finish_reason}]")
        return TurnAction.continue_run()

    @registry.pre_tool_call_decide(tools="shell", name="no_rm_rf")
    def no_rm_rf(ctx: PreToolCallDecideContext) -> HookResult:
        """Refuses `rm -rf`: the model must delete files one by one."""
        if "rm -rf" in str(ctx.args.get("command", "")):
            return HookResult.deny("rm -rf is not allowed; delete files one by one")
        return HookResult.allow()

    @registry.transform_tool_input(tools="shell", name="add_timeout")
    def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
        """Gives every shell command a 30 s timeout."""
        if "timeout" in ctx.args:
            return None
        say("hook", "add_timeout: shell gets timeout=30.0")
        return {**ctx.args, "timeout": 30.0}

    @registry.permission_denied
    def report_denial(ctx: PermissionDeniedContext) -> None:
        """Narrates a refused call."""
        say("hook", f"report_denial: {ctx.tool_name} refused by {ctx.decided_by}: {ctx.reason}")

    @registry.on_tool_error(name="explain_missing_file")
    def explain_missing_file(ctx: OnToolErrorContext) -> str | None:
        """Tells the model how to find the files when one is missing."""
        if not isinstance(ctx.error, FileNotFoundError):
            return None
        message = f"{ctx.args['path']} does not exist; run `ls` to see the files"
        say("hook", f"explain_missing_file: the model reads {message!r} instead of {ctx.message!r}")
        return message

    @registry.model_turn_finished(name="grow_cap_on_truncation")
    def grow_cap_on_truncation(ctx: ModelTurnFinishedContext) -> TurnAction:
        """Repeats a truncated answer with four times the token cap."""
        if ctx.finish_reason != "length" or ctx.max_tokens is None:
            return TurnAction.continue_run()
        cap = ctx.max_tokens * 4
        ctx.run.scratchpad.insert(RequestPatch(max_tokens=cap))
        say("hook", f"grow_cap_on_truncation: answer cut at {ctx.max_tokens} tokens; again with max_tokens={cap}")
        return TurnAction.repeat()

    @registry.pre_model_call
    def apply_cap(ctx: PreModelCallContext) -> RequestPatch | None:
        """Applies the cap grown above, if any, to the next model call."""
        return ctx.run.scratchpad.get(RequestPatch)

    @registry.post_tool_call
    def show_result(ctx: PostToolCallContext) -> None:
        """Narrates each tool result."""
        say("tool", f"{ctx.tool_name}({dict(ctx.args)}) -> {ctx.result!r}")

    return registry


def header(registry: HookRegistry) -> str:
    """What the demo is, the hooks it installs and where they live, and how to read its output."""
    lines = [
        "hookreg demo: a scripted agent tidies a pretend project directory, steered by hooks.",
        "The hooks are defined in demo_registry() in hookreg/__main__.py",
        f"({inspect.getsourcefile(demo_registry)}):",
    ]
    for point in HookPoint:
        for reg in registry.callbacks(point):
            doc = next(iter((inspect.getdoc(reg.callback) or "").splitlines()), "")
            line = inspect.getsourcelines(reg.callback)[1]
            lines.append(f"  line {line:<4} {point.value:<21} {reg.label:<23} {doc}")
    lines += [
        "Lines 'role │ text' are the demo's narration; lines '[hookreg LEVEL] event key=value' are hookreg's",
        'own log events (logger "hookreg", INFO and up for this run).',
        "",
    ]
    return "\n".join(lines)


@contextmanager
def library_events_on_stdout() -> Iterator[None]:
    """Show hookreg's INFO events on stdout for the duration, through a handler on the "hookreg" logger only.

    The demo configures nothing else: no root logger, no structlog.
    """
    logger = logging.getLogger("hookreg")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter(LIBRARY_FORMAT))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


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
    registry = demo_registry()
    print(header(registry))
    harness = Harness(model, [project.shell, project.read_file], registry, name="tidy", max_tokens=12)
    goal = "Tidy up the project directory: remove the log files."
    say("user", goal)
    with library_events_on_stdout(), registry.trace() as trace:
        result = harness.run(goal)
    say("run", f"{result.outcome.status} after {result.outcome.turns} model calls; files left: {sorted(project.files)}")
    print()
    print("The registry (registry.describe(); a notebook shows it as a table):")
    print(registry.describe())
    print()
    hooked = trace.hooked()
    refused = next(r for r in hooked if r.point is HookPoint.PRE_TOOL_CALL_DECIDE and r.summary == "deny")
    print(
        f"The refused call in the run's trace (with registry.trace() as trace: ...; of the run's {len(trace)} "
        f"dispatches, print(trace.hooked()) shows the {len(hooked)} where a hook ran):"
    )
    for record in hooked:
        if record.call_id == refused.call_id:
            print(f"  {record!r}")


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``demo`` and ``points``, with ``--help`` and ``--version``."""
    parser = argparse.ArgumentParser(
        prog="python -m hookreg",
        description="hookreg: one typed hook registry for Python AI agents.",
    )
    parser.add_argument("--version", action="version", version=f"hookreg {hookreg_version()}")
    commands = parser.add_subparsers(dest="command", title="commands", required=True)
    commands.add_parser(
        "demo",
        help="run a scripted agent steered by hooks, and show its registry and trace",
        description="Run a scripted agent tidying a pretend project, steered by the hooks in hookreg/__main__.py.",
    )
    commands.add_parser(
        "points",
        help="list the hook points: style, context, tools=, and what their hooks return",
        description="List the hook points: style, context class, whether tools= applies, what hooks return.",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command named in `argv` (default: ``sys.argv[1:]``); return the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, --version, or a usage error that argparse has already printed
        return exit_.code if isinstance(exit_.code, int) else 0
    if args.command == "points":
        print(points_table())
    else:
        demo()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
