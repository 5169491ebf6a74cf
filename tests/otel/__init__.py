"""Tests of hookreg.otel, and of the trace slot's watcher interface it is built on."""
