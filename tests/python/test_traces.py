"""Issue 19, OpenTelemetry traces through the real binary: the gateway exports over OTLP/HTTP to
a real receiver (an HTTP server decoding the OTLP protobuf with the `opentelemetry-proto`
package), one `request` span per request with children for authentication, the guardrail,
routing, each upstream attempt and the journal append; a client's W3C `traceparent` is continued
and passed on to the upstream; without one, the trace id is the request id of
`X-Audit-Trace-ID` and the journal entry."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

import harness

SETTINGS = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})
HI = [{"role": "user", "content": "hello there, a short question"}]


class Receiver:
    """An OTLP/HTTP trace receiver: every span it was sent, as plain dicts."""

    def __init__(self):
        self.spans: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the stdlib's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                ok = self.path == "/v1/traces" and self.headers.get("Content-Type") == "application/x-protobuf"
                if ok:
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    receiver.take(request)
                self.send_response(200 if ok else 400)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, request):
        with self.lock:
            for rs in request.resource_spans:
                service = {a.key: a.value.string_value for a in rs.resource.attributes}.get("service.name")
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append({
                            "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(), "name": s.name, "kind": s.kind,
                            "service": service, "error": s.status.code == 2,
                            "attributes": {a.key: getattr(a.value, a.value.WhichOneof("value"))
                                           for a in s.attributes},
                        })

    def trace(self, trace_id: str, root: str, count: int) -> list[dict]:
        """The spans of one trace, once its root and at least `count` spans arrived."""
        def ready():
            with self.lock:
                spans = [s for s in self.spans if s["trace_id"] == trace_id]
            return spans if len(spans) >= count and any(s["name"] == root for s in spans) else None
        return harness.wait_for(ready, timeout=15, what=f"{count} spans of trace {trace_id}")


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture(scope="module")
def gw(sim, keys, receiver, tmp_path_factory):
    directory = tmp_path_factory.mktemp("traces")
    config = harness.gateway_config(
        harness.fleet_models(sim.url), keys["config"], journal={"enabled": True},
        extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\n")
    p = harness.start_gateway(config, directory, env={
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_SERVICE_NAME": "gateway-under-test"})
    yield p
    p.kill()


def chat(gw, keys, **headers):
    return httpx.post(f"{gw.url}/v1/chat/completions",
                      headers={"Authorization": f"Bearer {keys['member']}", **headers},
                      json={"model": "jais-30b-chat", "messages": HI}, timeout=30)


def test_a_request_is_one_trace_whose_id_is_the_audit_trace_id(gw, keys, receiver, sim):
    r = chat(gw, keys)
    assert r.status_code == 200, r.text
    request_id = r.headers["x-audit-trace-id"]
    trace_id = request_id.removeprefix("req-")
    spans = receiver.trace(trace_id, "chat.completions", 7)
    by_name = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    root = by_name["chat.completions"][0]
    assert root["parent"] == "" and root["kind"] == 2  # SERVER
    assert root["service"] == "gateway-under-test"
    assert root["attributes"]["http.response.status_code"] == 200
    children = {"authenticate", "guardrail", "route", "upstream", "journal.append"}
    assert children <= set(by_name), sorted(by_name)
    for name in children:
        for s in by_name[name]:
            assert s["parent"] == root["span_id"], (name, s)
    assert sorted(s["attributes"]["sovereign.stage"] for s in by_name["guardrail"]) == ["input", "output"]
    assert by_name["upstream"][0]["kind"] == 3  # CLIENT
    assert by_name["upstream"][0]["attributes"]["sovereign.model"] == "jais-30b-chat"
    assert all(s["attributes"]["sovereign.request_id"] == request_id for s in spans)
    # The upstream was sent the upstream span's context.
    sent = harness.sim_requests(sim)[-1]["traceparent"]
    assert sent == f"00-{trace_id}-{by_name['upstream'][0]['span_id']}-01"
    # From the trace back to the audit record: the journal entry of that request id.
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}) as a:
        logs = a.post("/v1/activity/logs", json={"request_id": request_id}).json()["data"]
        assert [e["status"] for e in logs] == ["success"]


def test_a_clients_traceparent_is_continued(gw, keys, receiver, sim):
    client_trace, client_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    r = chat(gw, keys, traceparent=f"00-{client_trace}-{client_span}-01")
    assert r.status_code == 200, r.text
    spans = receiver.trace(client_trace, "chat.completions", 7)
    root = next(s for s in spans if s["name"] == "chat.completions")
    assert root["parent"] == client_span
    assert root["attributes"]["sovereign.request_id"] == r.headers["x-audit-trace-id"]
    upstream = next(s for s in spans if s["name"] == "upstream")
    assert harness.sim_requests(sim)[-1]["traceparent"] == f"00-{client_trace}-{upstream['span_id']}-01"


def test_a_failed_upstream_attempt_is_an_error_span(gw, keys, receiver, sim):
    harness.sim_set(sim, "jais-30b-chat", fail="error500")
    r = chat(gw, keys)
    assert r.status_code >= 500
    trace_id = r.headers["x-audit-trace-id"].removeprefix("req-")
    spans = receiver.trace(trace_id, "chat.completions", 4)
    root = next(s for s in spans if s["name"] == "chat.completions")
    assert root["error"] and root["attributes"]["http.response.status_code"] == r.status_code
    assert any(s["name"] == "upstream" and s["error"] for s in spans)


def test_traces_are_off_without_an_endpoint(gateway):
    # The session gateway has no OTLP variables: it starts, serves, and says nothing of traces.
    assert httpx.get(f"{gateway.url}/healthz").status_code == 200
    assert not any("OpenTelemetry" in line for line in gateway.stderr_lines)
