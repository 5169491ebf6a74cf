"""Test helpers for code that uses hookreg: contexts, single-point calls, recording, a pytest plugin.

Installing hookreg registers a pytest plugin with two fixtures: ``hook_registry``
(a fresh HookRegistry) and ``hook_trace`` (a trace open on it for the test).
The adapter conformance kit is `hookreg.testing.conformance`.
"""

# The trace records are hookreg's (hookreg.Trace...), loaded with the first use; tests meet them here too.
from hookreg import DispatchRecord, HookCall, Trace
from hookreg.testing._assertions import assert_allowed, assert_asks, assert_denied, assert_hooks_called
from hookreg.testing._contexts import make_context
from hookreg.testing._helpers import acall_hook, acall_point, call_hook, call_point
from hookreg.testing._recording import RecordingObserver

__all__ = [
    "DispatchRecord",
    "HookCall",
    "RecordingObserver",
    "Trace",
    "acall_hook",
    "acall_point",
    "assert_allowed",
    "assert_asks",
    "assert_denied",
    "assert_hooks_called",
    "call_hook",
    "call_point",
    "make_context",
]
