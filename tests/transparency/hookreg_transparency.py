"""A pytest plugin that attaches hookreg to every agent of a framework's own test suite and records each outcome.

Loaded into the framework's test run by `runner.py` (``-p hookreg_transparency``), never by hookreg's own tests.
The environment says what to do:

- ``HOOKREG_TRANSPARENCY_FRAMEWORK``: the adapter module (``openai_agents``); its ``transparency_<module>.py``
  beside this file says how to attach hookreg to every agent (``inject``).
- ``HOOKREG_TRANSPARENCY_MODE``: ``off`` (hookreg not attached: the reference), ``empty`` (attached, no hook) or
  ``hooked`` (an observer at every observe point, a pass-through hook at every transform point and an allowing
  gate at every decide point that has one — nothing that changes what the framework does).
- ``HOOKREG_TRANSPARENCY_OUTCOMES``: a file that gets one JSON line per test: its node id and outcome.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from typing import IO, Protocol

import pytest

from hookreg import HookPoint, HookRegistry, HookResult, HookStyle, TurnAction

MODES = ("off", "empty", "hooked")
"""The three ways a framework's tests run: without hookreg, with an empty registry, with pass-through hooks."""


class Framework(Protocol):
    """What ``transparency_<module>.py`` declares for its framework (see ``runner.py``)."""

    def inject(self, registry: HookRegistry) -> None:
        """Make every agent the framework's tests build run with `registry` attached through the adapter."""


def _observe(ctx: object) -> None:
    del ctx


def _transform(ctx: object) -> None:
    del ctx


def _allow(ctx: object) -> HookResult:
    del ctx
    return HookResult.allow()


def _continue(ctx: object) -> TurnAction:
    del ctx
    return TurnAction.continue_run()


def _no_action(ctx: object) -> None:
    del ctx


# The pass-through answer of each decide point. ON_INTERACTION has none (any answer would answer a question a
# human should see), so it gets no hook.
_DECIDERS: dict[HookPoint, Callable[[object], HookResult | TurnAction | None]] = {
    HookPoint.USER_PROMPT_SUBMIT: _allow,
    HookPoint.PRE_TURN: _allow,
    HookPoint.PRE_TOOL_CALL_DECIDE: _allow,
    HookPoint.STOP: _allow,
    HookPoint.MODEL_TURN_FINISHED: _continue,
    HookPoint.INVALID_TOOL_CALL: _no_action,
}


def pass_through_registry() -> HookRegistry:
    """A registry with a hook at every point that changes nothing (the ``hooked`` mode)."""
    registry = HookRegistry()
    for point in HookPoint:
        if point.style is HookStyle.OBSERVE:
            registry.register(point, _observe)
        elif point.style is HookStyle.TRANSFORM:
            registry.register(point, _transform)
        elif point in _DECIDERS:
            registry.register(point, _DECIDERS[point])
    return registry


class _Recorder:
    """Writes each test's outcome once its last phase has run: failed if any phase failed, else skipped or passed."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._failed: set[str] = set()
        self._skipped: set[str] = set()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
            self._write(report.nodeid, outcome)
            return
        if report.failed:
            self._failed.add(report.nodeid)
        elif report.skipped:
            self._skipped.add(report.nodeid)
        if report.when == "teardown":
            if report.nodeid in self._failed:
                outcome = "failed"
            elif report.nodeid in self._skipped:
                outcome = "skipped"
            else:
                outcome = "passed"
            self._write(report.nodeid, outcome)

    def _write(self, nodeid: str, outcome: str) -> None:
        self._out.write(json.dumps({"test": nodeid, "outcome": outcome}) + "\n")
        self._out.flush()


def pytest_configure(config: pytest.Config) -> None:
    """Attach hookreg as the mode says, and start recording outcomes."""
    mode = os.environ.get("HOOKREG_TRANSPARENCY_MODE", "off")
    if mode not in MODES:
        msg = f"Cannot run in HOOKREG_TRANSPARENCY_MODE={mode!r}: it is not one of {MODES}. Set one of them."
        raise pytest.UsageError(msg)
    if mode != "off":
        module = os.environ["HOOKREG_TRANSPARENCY_FRAMEWORK"]
        framework: Framework = importlib.import_module(f"transparency_{module}")
        framework.inject(HookRegistry() if mode == "empty" else pass_through_registry())
    out = os.environ.get("HOOKREG_TRANSPARENCY_OUTCOMES")
    if out:
        stream = open(out, "a", encoding="utf-8")  # noqa: SIM115 -- open for the whole run, closed at unconfigure
        config.add_cleanup(stream.close)
        config.pluginmanager.register(_Recorder(stream), "hookreg_transparency_recorder")
