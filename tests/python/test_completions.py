"""Legacy text completions (`POST /v1/completions`) through the gateway with the official SDK:
plain and streamed, usage always answered, the guardrail on the prompt and the text, the
journal's action, and bad bodies refused in the convention's shape."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

import harness


def test_a_completion_is_routed_answered_and_labelled(client, sim):
    r = client.completions.with_raw_response.create(model="qwen2.5-coder-32b", prompt="def fib(n):",
                                                     max_tokens=50)
    c = r.parse()
    assert c.object == "text_completion" and c.model == "qwen2.5-coder-32b"
    assert c.choices[0].text and c.choices[0].finish_reason in ("stop", "length")
    assert c.usage.total_tokens == c.usage.prompt_tokens + c.usage.completion_tokens
    assert r.headers["x-audit-trace-id"] == c.id
    assert r.headers["x-data-residency"]
    upstream = harness.sim_requests(sim)[-1]
    assert upstream["path"] == "/v1/completions" and upstream["body"]["prompt"] == "def fib(n):"


def test_a_streamed_completion_ends_with_finish_reason_and_the_usage_asked_for(client):
    stream = client.completions.create(model="jais-30b-chat", prompt="مرحبا", stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert "jais-30b-chat" in text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_usage_is_counted_when_the_upstream_reports_none(client, sim):
    harness.sim_set(sim, "magistral-small", no_usage=True)
    try:
        c = client.completions.create(model="magistral-small", prompt="Bonjour")
        assert c.usage is not None and c.usage.completion_tokens > 0
    finally:
        harness.sim_set(sim, "magistral-small")


@pytest.mark.parametrize("body", [
    {"model": "jais-30b-chat"},
    {"model": "jais-30b-chat", "prompt": ""},
    {"model": "jais-30b-chat", "prompt": 3},
    {"model": "jais-30b-chat", "prompt": "x", "max_tokens": -1},
    {"model": "jais-30b-chat", "prompt": "x", "stream_options": {"include_usage": True}},
    {"prompt": "x"},
])
def test_bad_bodies_are_400(http, body):
    r = http.post("/v1/completions", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == "invalid_request_error"


def test_the_guardrail_reads_the_prompt_and_the_text(sim, gateway_factory, keys):
    settings = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})
    gw = gateway_factory(harness.fleet_models(sim.url),
                         extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(settings)}\n",
                         journal={"enabled": True})
    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0)
    c = client.completions.create(model="jais-30b-chat", prompt="Write to salem@example.sa:")
    sent = harness.sim_requests(sim)[-1]["body"]["prompt"]
    assert sent == "Write to [EMAIL]:", sent
    assert "salem@example.sa" not in c.choices[0].text
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="jais-30b-chat", prompt="card 4111 1111 1111 1111")
    assert e.value.code == "pii_detected"
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}) as a:
        logs = a.post("/v1/activity/logs", json={"action": "completions.create"}).json()
        assert {e["status"] for e in logs["data"]} >= {"success", "blocked"}, logs
