"""This module owns sending spans over OTLP/HTTP with opentelemetry-sdk: the only module importing opentelemetry.

Span records (:class:`~storm_py.tracing.spans.SpanRecord`, ids already decided) become the SDK's finished spans
and go through its batch processor to its OTLP/HTTP exporter, which posts them (protobuf) from a thread of its
own; a full queue drops spans, never blocks a task.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

from storm_py.tracing.spans import Kind, SpanRecord
from storm_py.version import __version__

_KINDS: Mapping[Kind, SpanKind] = {"internal": SpanKind.INTERNAL, "producer": SpanKind.PRODUCER,
                                   "consumer": SpanKind.CONSUMER}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
#: Milliseconds between the exporter's posts (the SDK's default is 5000).
EXPORT_DELAY_MS = 1000
#: Seconds one post may take.
EXPORT_TIMEOUT_SECS = 10.0


def _context(trace: int, span: int) -> SpanContext:
    return SpanContext(trace, span, is_remote=False, trace_flags=_SAMPLED)


class OtlpSink:
    """Spans to an OTLP/HTTP endpoint, as service ``service`` with ``attributes`` on its resource."""

    def __init__(self, endpoint: str, service: str, attributes: Mapping[str, str]) -> None:
        self.resource = Resource.create({"service.name": service, **attributes})
        self.scope = InstrumentationScope("storm_py", __version__)
        self.processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_SECS),
                                            schedule_delay_millis=EXPORT_DELAY_MS)

    def export(self, spans: list[SpanRecord]) -> None:
        """Queue finished spans for the exporter."""
        for s in spans:
            parent = _context(s.trace_id, s.parent_id) if s.parent_id is not None else None
            self.processor.on_end(ReadableSpan(
                s.name, _context(s.trace_id, s.span_id), parent, self.resource, dict(s.attributes),
                kind=_KINDS[s.kind], instrumentation_scope=self.scope,
                start_time=int(s.start * 1e9), end_time=int(s.end * 1e9),
            ))

    def close(self) -> None:
        """Post what is queued, then stop the exporter's thread."""
        self.processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
