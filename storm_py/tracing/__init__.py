"""Tracing sampled tuple trees as OpenTelemetry spans: the span core (:mod:`storm_py.tracing.spans`), the worker's
tracer (:mod:`storm_py.tracing.tracer`) and the OTLP/HTTP exporter (:mod:`storm_py.tracing.otlp`, the only module
importing opentelemetry)."""
