"""Fixtures for hookreg.external: real hook scripts on disk, and one dispatcher per surface."""

from __future__ import annotations

import asyncio
import itertools
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from hookreg import HookRegistry, PreToolCallDecideContext, ToolCallResolution


class Kit:
    """Writes small hook scripts into a temporary directory; builds configs and tool-call contexts."""

    # A guard in the style of the popular ones: exit 2 with a reason when the command removes recursively.
    BLOCK_RM = """
input=$(cat)
case "$input" in
  *"rm -rf"*) echo "rm -rf is not allowed" >&2; exit 2 ;;
esac
exit 0
"""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.calls = folder / "calls.log"
        self._names = itertools.count()

    def python(self, body: str) -> str:
        """A Python hook script; `LOG` in it is the path of the shared invocation log."""
        path = self.folder / f"hook{next(self._names)}.py"
        path.write_text(f"import json, os, sys\nLOG = {str(self.calls)!r}\n{body}\n")
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"

    def shell(self, body: str) -> str:
        """An executable ``/bin/sh`` script; ``$LOG`` in it is the invocation log."""
        path = self.folder / f"hook{next(self._names)}.sh"
        path.write_text(f"#!/bin/sh\nLOG={shlex.quote(str(self.calls))}\n{body}\n")
        path.chmod(0o755)
        return shlex.quote(str(path))

    def answering(self, answer: Mapping[str, object], *, name: str = "hook") -> str:
        """A Python hook that logs its name and prints `answer` as JSON."""
        return self.python(f"open(LOG, 'a').write({name!r} + '\\n')\nprint(json.dumps({dict(answer)!r}))")

    def invocations(self) -> list[str]:
        """The names logged by the hooks that ran, in order."""
        return self.calls.read_text().split() if self.calls.exists() else []

    @staticmethod
    def claude(event: str, *commands: str, matcher: str | None = None, **options: object) -> dict[str, Any]:
        """A Claude Code settings mapping: one group of command hooks under `event`."""
        hooks = [{"type": "command", "command": command, **options} for command in commands]
        group: dict[str, object] = {"hooks": hooks}
        if matcher is not None:
            group["matcher"] = matcher
        return {"hooks": {event: [group]}}

    @staticmethod
    def call(tool: str = "Bash", call_id: str = "c1", **args: object) -> PreToolCallDecideContext:
        """A tool call's context (by default ``Bash`` running ``ls``)."""
        return PreToolCallDecideContext(tool_name=tool, args=args or {"command": "ls"}, call_id=call_id)


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    """A fresh script folder per test."""
    return Kit(tmp_path)


class Surface:
    """Dispatches through the sync or the async surface of a registry."""

    def __init__(self, name: str) -> None:
        self.name = name

    def resolve(self, registry: HookRegistry, ctx: PreToolCallDecideContext) -> ToolCallResolution:
        if self.name == "sync":
            return registry.resolve_tool_call(ctx)
        return asyncio.run(registry.aresolve_tool_call(ctx))

    def decide(self, registry: HookRegistry, point: Any, ctx: Any) -> Any:
        if self.name == "sync":
            return registry.decide(point, ctx)
        return asyncio.run(registry.adecide(point, ctx))

    def transform(self, registry: HookRegistry, point: Any, ctx: Any) -> Any:
        if self.name == "sync":
            return registry.transform(point, ctx)
        return asyncio.run(registry.atransform(point, ctx))

    def notify(self, registry: HookRegistry, point: Any, ctx: Any) -> None:
        if self.name == "sync":
            registry.notify(point, ctx)
        else:
            asyncio.run(registry.anotify(point, ctx))


@pytest.fixture(params=["sync", "async"])
def surface(request: pytest.FixtureRequest) -> Surface:
    """Each test using it runs once per surface."""
    return Surface(request.param)
