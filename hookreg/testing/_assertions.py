"""Assertion helpers for gate results and traces, with messages that say what happened instead."""

from __future__ import annotations

import re

from hookreg import Decision, DispatchRecord, HookResult, Trace

__all__ = ["assert_allowed", "assert_asks", "assert_denied", "assert_hooks_called"]


def _result(result: object) -> object:
    return result.result if isinstance(result, DispatchRecord) else result


def _check(result: object, decision: Decision, reason: str | None, by: str | None) -> HookResult:
    value = _result(result)
    if not isinstance(value, HookResult):
        msg = f"expected a HookResult ({decision.value}), got {value!r}"
        raise AssertionError(msg)
    if value.decision is not decision:
        why = f": {value.reason}" if value.reason else ""
        msg = f"expected {decision.value}, got {value.decision.value} from {value.decided_by!r}{why}"
        raise AssertionError(msg)
    if reason is not None and not re.search(reason, value.reason):
        msg = f"expected the reason to match {reason!r}, got {value.reason!r}"
        raise AssertionError(msg)
    if by is not None and value.decided_by != by:
        msg = f"expected the {decision.value} to come from {by!r}, got {value.decided_by!r}"
        raise AssertionError(msg)
    return value


def assert_allowed(result: object, *, by: str | None = None) -> HookResult:
    """Assert that `result` (a HookResult or the DispatchRecord of one) is an allow.

    Args:
        result: What ``decide`` returned, or ``call_point``'s record.
        by: Also require this ``decided_by`` (an allow carrying a message).

    Returns:
        The HookResult, for further checks.

    Raises:
        AssertionError: It is not, saying what it is instead.
    """
    return _check(result, Decision.ALLOW, None, by)


def assert_denied(result: object, reason: str | None = None, *, by: str | None = None) -> HookResult:
    """Assert that `result` (a HookResult or the DispatchRecord of one) is a deny.

    Args:
        result: What ``decide`` returned, or ``call_point``'s record.
        reason: A regular expression the reason must contain (``re.search``).
        by: The name of the hook that must have decided.

    Returns:
        The HookResult, for further checks.

    Raises:
        AssertionError: It is not, saying what it is instead.
    """
    return _check(result, Decision.DENY, reason, by)


def assert_asks(result: object, reason: str | None = None, *, by: str | None = None) -> HookResult:
    """Assert that `result` (a HookResult or the DispatchRecord of one) is an ask; see `assert_denied`.

    Returns:
        The HookResult, for further checks.

    Raises:
        AssertionError: It is not, saying what it is instead.
    """
    return _check(result, Decision.ASK, reason, by)


def assert_hooks_called(trace: Trace | DispatchRecord, *names: str) -> None:
    """Assert that exactly the hooks `names` were called, in this order, in a trace or one dispatch.

    Raises:
        AssertionError: Other hooks ran, listing them.
    """
    called = trace.hooks if isinstance(trace, DispatchRecord) else tuple(call.hook for call in trace.calls)
    if called != names:
        msg = f"expected the hooks {list(names)} to be called in order, got {list(called)}"
        raise AssertionError(msg)
