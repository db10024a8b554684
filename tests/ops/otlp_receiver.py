"""A small OTLP/HTTP receiver for tests: records the spans posted to ``/v1/traces`` (protobuf), decoded with
``opentelemetry.proto``."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass(frozen=True)
class Span:
    trace: str
    span: str
    parent: str
    name: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    service: str
    resource: dict[str, Any]


class OtlpReceiver:
    """Listens on 127.0.0.1 (a free port); ``endpoint`` is the URL to configure; ``spans`` what arrived."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.posts = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver.record(ExportTraceServiceRequest.FromString(body))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="otlp-receiver", daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def record(self, request: ExportTraceServiceRequest) -> None:
        out = []
        for rs in request.resource_spans:
            resource = {a.key: a.value.string_value for a in rs.resource.attributes}
            service = str(resource.get("service.name", ""))
            for ss in rs.scope_spans:
                for s in ss.spans:
                    attrs = {a.key: (a.value.string_value or a.value.int_value) for a in s.attributes}
                    out.append(Span(s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name,
                                    KINDS.get(s.kind, str(s.kind)), s.start_time_unix_nano, s.end_time_unix_nano,
                                    attrs, service, resource))
        with self.lock:
            self.posts += 1
            self.spans.extend(out)

    def traces(self) -> dict[str, list[Span]]:
        """The spans received so far, by trace id."""
        with self.lock:
            spans = list(self.spans)
        out: dict[str, list[Span]] = {}
        for s in spans:
            out.setdefault(s.trace, []).append(s)
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def tree(spans: list[Span]) -> list[tuple[str, ...]]:
    """Each root-to-leaf chain of span names of one trace, sorted (parents found by id)."""
    by_id = {s.span: s for s in spans}
    children: dict[str, list[Span]] = {}
    for s in spans:
        children.setdefault(s.parent, []).append(s)
    chains: list[tuple[str, ...]] = []

    def walk(s: Span, path: tuple[str, ...]) -> None:
        path = (*path, s.name)
        kids = children.get(s.span, [])
        if not kids:
            chains.append(path)
        for k in kids:
            walk(k, path)

    for s in spans:
        if not s.parent or s.parent not in by_id:
            walk(s, ())
    return sorted(chains)
