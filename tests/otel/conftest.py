"""An SDK tracer provider exporting to memory, per test; never the global provider."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Spans:
    """A tracer provider whose finished spans are kept in memory, by name."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")

    @property
    def finished(self) -> tuple[ReadableSpan, ...]:
        """Every finished span, in the order they ended."""
        return tuple(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        """The finished spans called `name`, in the order they ended."""
        return [span for span in self.finished if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        """The only finished span called `name`."""
        (span,) = self.named(name)
        return span


@pytest.fixture
def spans() -> Iterator[Spans]:
    kept = Spans()
    yield kept
    kept.provider.shutdown()
