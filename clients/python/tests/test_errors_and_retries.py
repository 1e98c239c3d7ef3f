"""The error mapping and retry rules (clients/SPEC.md, "Errors"), on a scripted transport: no
gateway can be made to answer 503 or 429 on demand."""

from __future__ import annotations

import json
import time
from typing import List

import httpx2
import openai
import pytest

import sovereign_gateway as sg

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
OK = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": []}


def _client(answers: List[httpx2.Response], seen: list, **kw) -> sg.Sovereign:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return answers[min(len(seen), len(answers)) - 1]

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return sg.Sovereign(base_url="http://gw.test", api_key="k", http_client=http, **kw)


def _error(status: int, type_: str, code=None, headers=None) -> httpx2.Response:
    body = {"error": {"message": f"{type_} happened", "type": type_, "param": None, "code": code}}
    return httpx2.Response(status, json=body, headers={"x-audit-trace-id": "trace-1", **(headers or {})})


def test_503_is_retried_honouring_retry_after():
    seen: list = []
    client = _client([_error(503, "server_error", headers={"retry-after": "0"}),
                      httpx2.Response(200, json=OK, headers={"x-sovereign-id": "sid"})], seen)
    reply = client.chat.completions.create(**CHAT)
    assert len(seen) == 2 and reply.sovereign_id == "sid"


def test_503_after_the_retries_is_service_unavailable():
    seen: list = []
    client = _client([_error(503, "server_error", headers={"retry-after": "0"})], seen, max_retries=1)
    with pytest.raises(sg.ServiceUnavailableError) as e:
        client.chat.completions.create(**CHAT)
    assert isinstance(e.value, openai.InternalServerError) and len(seen) == 2
    assert e.value.audit_trace_id == "trace-1" and e.value.status == 503


def test_rate_limit_is_retried_and_keeps_retry_after_and_reset():
    seen: list = []
    reset = str(int(time.time()) + 3)
    client = _client([_error(429, "rate_limit_exceeded", "rate_limit_exceeded",
                             {"retry-after": "0", "x-ratelimit-reset": reset})], seen)
    with pytest.raises(sg.RateLimitError) as e:
        client.chat.completions.create(**CHAT)
    assert len(seen) == 3 and e.value.retry_after == 0 and e.value.reset == float(reset)


def test_budget_is_never_retried():
    seen: list = []
    client = _client([_error(429, "insufficient_quota", "insufficient_quota")], seen)
    with pytest.raises(sg.BudgetExceededError) as e:
        client.chat.completions.create(**CHAT)
    assert len(seen) == 1 and isinstance(e.value, openai.RateLimitError)


def test_non_idempotent_admin_calls_are_retried_only_on_429():
    seen: list = []
    client = _client([_error(503, "server_error", headers={"retry-after": "0"})], seen)
    with pytest.raises(sg.ServiceUnavailableError):
        client.admin.teams.create("t")
    assert len(seen) == 1
    seen.clear()
    team = {"id": "t1", "object": "team", "name": "t"}
    client = _client([_error(429, "rate_limit_exceeded", headers={"retry-after": "0"}),
                      httpx2.Response(201, json=team)], seen)
    assert client.admin.teams.create("t").id == "t1" and len(seen) == 2
    assert json.loads(seen[0].content) == {"name": "t"}


def test_max_retries_zero_disables():
    seen: list = []
    client = _client([_error(502, "upstream_error", headers={"retry-after": "0"})], seen, max_retries=0)
    with pytest.raises(sg.InternalServerError):
        client.chat.completions.create(**CHAT)
    assert len(seen) == 1


@pytest.mark.parametrize("status,type_,code,cls", [
    (400, "guardrail_violation", "pii_detected", sg.GuardrailViolationError),
    (451, "sovereignty_error", "sensitive_requires_local", sg.DataResidencyError),
    (400, "invalid_request_error", None, sg.BadRequestError),
    (401, "authentication_error", None, sg.AuthenticationError),
    (403, "permission_error", None, sg.PermissionDeniedError),
    (404, "invalid_request_error", "model_not_found", sg.NotFoundError),
    (409, "invalid_request_error", None, sg.ConflictError),
    (413, "invalid_request_error", None, sg.PayloadTooLargeError),
    (422, "invalid_request_error", None, sg.UnprocessableEntityError),
    (500, "server_error", None, sg.InternalServerError),
])
def test_error_mapping(status, type_, code, cls):
    seen: list = []
    client = _client([_error(status, type_, code)], seen)
    with pytest.raises(cls) as e:
        client.models.list()
    err = e.value
    assert type(err) is cls and isinstance(err, openai.APIStatusError)
    assert (err.status, err.type, err.code, err.audit_trace_id) == (status, type_, code, "trace-1")
    assert err.message == f"{type_} happened" and len(seen) == 1


def test_waits_are_capped_at_60_seconds():
    client = sg.Sovereign(base_url="http://gw.test", api_key="k")
    from openai._models import FinalRequestOptions

    opts = FinalRequestOptions.construct(method="get", url="/x")
    assert client._calculate_retry_timeout(1, opts, httpx2.Headers({"retry-after": "3600"})) == 60.0
    later = str(int(time.time()) + 30)
    assert 25 <= client._calculate_retry_timeout(1, opts, httpx2.Headers({"x-ratelimit-reset": later})) <= 30
    assert 0 < client._calculate_retry_timeout(2, opts, None) <= 0.5


def test_base_url_and_environment(monkeypatch):
    monkeypatch.setenv("SOVEREIGN_BASE_URL", "http://gw.test:8080/")
    monkeypatch.setenv("SOVEREIGN_API_KEY", "sk-sov-env")
    client = sg.Sovereign()
    assert str(client.base_url) == "http://gw.test:8080/v1/" and client.api_key == "sk-sov-env"
    assert str(sg.Sovereign(base_url="http://gw.test/v1").base_url) == "http://gw.test/v1/"


def test_activity_pages_follow_next_cursor():
    bodies: list = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        start = int(body.get("cursor") or 0)
        data = [{"seq": s, "model": "m"} for s in range(start + 1, min(start + 2, 5) + 1)] if start < 5 else []
        nxt = str(data[-1]["seq"]) if data and data[-1]["seq"] < 5 else None
        if start == 2:  # an empty page that still continues (the server's scan budget)
            data, nxt = [], "3"
        return httpx2.Response(200, json={"object": "list", "data": data, "next_cursor": nxt})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    client = sg.Sovereign(base_url="http://gw.test", api_key="k", http_client=http)
    page = client.activity.query(limit=2, model="m")
    assert [e.seq for e in page.data] == [1, 2] and page.next_cursor == "2"
    assert [e.seq for e in page] == [1, 2, 4, 5]
    assert bodies[0] == {"limit": 2, "model": "m", "format": "json"}
    assert [b.get("cursor") for b in bodies] == [None, "2", "3"]
