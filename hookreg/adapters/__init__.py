"""Adapters driving agent frameworks from one HookRegistry; import ``hookreg.adapters.<framework>`` on demand.

This package imports no framework. Each adapter module imports its framework
and raises `ImportError` naming the extra to install when it is missing. The
shared rules of the tool-call and run lifecycle live in `hookreg._lifecycle`
(the same flows `hookreg.harness` drives): adapters call its functions
directly and only translate their framework's events into those flows.
"""

from __future__ import annotations

__all__: list[str] = []
