"""The async surface: hook processes never block the event loop, run concurrently, and die with a cancelled task."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from hookreg import HookPoint, HookRegistry, StopContext
from hookreg.external import load_hooks_config

Kit = Any  # the `kit` fixture (tests/external/conftest.py)


def test_a_running_hook_does_not_block_the_loop(kit: Kit) -> None:
    """A ticker task keeps ticking while a 0.3 s hook runs under aresolve_tool_call."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("sleep 0.3")))
    ticks: list[int] = []

    async def ticker() -> None:
        while True:
            ticks.append(len(ticks))
            await asyncio.sleep(0.01)

    async def main() -> tuple[bool, int]:
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # the ticker's first tick
        before = len(ticks)
        resolution = await registry.aresolve_tool_call(kit.call())
        during = len(ticks) - before
        task.cancel()
        return resolution.result.allowed, during

    allowed, during = asyncio.run(main())
    assert allowed
    assert during > 0


def test_entries_run_concurrently_on_the_async_surface(kit: Kit, tmp_path: Path) -> None:
    """Two hooks that each wait for the other's mark both finish: they run at the same time."""

    def waiting(mine: str, theirs: str) -> Any:
        return kit.python(
            f"import time\nopen({str(tmp_path / mine)!r}, 'w').close()\n"
            f"for _ in range(400):\n    if os.path.exists({str(tmp_path / theirs)!r}):\n        sys.exit(0)\n"
            "    time.sleep(0.01)\nsys.exit(1)"
        )

    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", waiting("a", "b"), waiting("b", "a")))
    assert asyncio.run(registry.aresolve_tool_call(kit.call())).result.allowed


def test_cancelling_the_dispatch_kills_the_process(kit: Kit, tmp_path: Path) -> None:
    """A cancelled aresolve_tool_call raises CancelledError and kills the hook process it started."""
    pid_file = tmp_path / "pid"
    hang = kit.shell(f"echo $$ > {pid_file}\nexec sleep 30")
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", hang))

    async def main() -> None:
        task = asyncio.create_task(registry.aresolve_tool_call(kit.call()))
        for _ in range(400):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    pid = int(pid_file.read_text())
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the cancelled hook's process is still running")


def test_a_dispatch_timeout_bounds_the_whole_event_hook(kit: Kit) -> None:
    """Re-registering the loaded hook with timeout= bounds it on the async surface (a dual-path hook)."""
    registry = HookRegistry()
    inclusion = load_hooks_config(registry, kit.claude("Stop", kit.shell("sleep 30")))
    [loaded] = inclusion.registry.callbacks("stop")
    inclusion.registry.register("stop", loaded.callback, name=loaded.name, timeout=0.3)  # type: ignore[arg-type]  # the loaded hook, re-registered as is

    result = asyncio.run(registry.adecide(HookPoint.STOP, StopContext(response_text="done", continuation_count=0)))
    assert (result.allowed, "timed out" in result.message) == (True, True)
