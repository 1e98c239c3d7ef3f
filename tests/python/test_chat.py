"""Non-streamed chat completions through the official SDK: routing, the gateway's headers and ids,
and the request reaching the upstream as the client sent it."""

from __future__ import annotations

import re
import uuid

import pytest

import harness

ARABIC = re.compile(r"[\u0600-\u06FF]")
CHAT_MODELS = [m for m in harness.FLEET if m["kind"] == "chat"]


def sim_request_by_user(sim, marker: str) -> dict:
    """The one upstream request whose body carries `user == marker`."""
    found = [r for r in harness.sim_requests(sim) if r["body"].get("user") == marker]
    assert len(found) == 1, f"expected one upstream request tagged {marker}, got {len(found)}"
    return found[0]


def assert_gateway_headers(headers, region: str, policy: str):
    assert headers["x-sovereign-id"] == "test-gw-1"
    assert re.fullmatch(r"req-[0-9a-f]{32}", headers["x-audit-trace-id"]), headers["x-audit-trace-id"]
    assert headers["x-data-residency"] == region
    # No router policy in this gateway's config: auto-router takes the default model.
    assert headers["x-route-policy"] == policy


def test_auto_router_lands_on_default_model_and_answers_in_arabic(client):
    raw = client.chat.completions.with_raw_response.create(
        model="auto-router", messages=[{"role": "user", "content": "What is the capital?"}])
    completion = raw.parse()
    assert raw.status_code == 200
    assert completion.model == "jais-30b-chat"
    assert completion.id == raw.headers["x-audit-trace-id"]
    assert_gateway_headers(raw.headers, "sa-riyadh-1", "default")
    content = completion.choices[0].message.content
    assert ARABIC.search(content), content
    assert "jais-30b-chat" in content and "What is the capital?" in content
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0


def test_explicit_model_answers_in_french(client):
    raw = client.chat.completions.with_raw_response.create(
        model="magistral-small", messages=[{"role": "user", "content": "Quelle heure est-il ?"}])
    completion = raw.parse()
    assert completion.model == "magistral-small"
    assert completion.id == raw.headers["x-audit-trace-id"]
    assert_gateway_headers(raw.headers, "eu-paris-1", "explicit-model")
    content = completion.choices[0].message.content
    assert content.startswith("Bonjour"), content
    assert "magistral-small" in content and not ARABIC.search(content)


@pytest.mark.parametrize("model", CHAT_MODELS, ids=lambda m: m["id"])
def test_every_chat_model_is_served_by_itself_from_its_region(client, sim, model):
    marker = f"u-{uuid.uuid4().hex}"
    raw = client.chat.completions.with_raw_response.create(
        model=model["id"], user=marker, messages=[{"role": "user", "content": "hi"}])
    completion = raw.parse()
    assert completion.model == model["id"]
    assert model["id"] in completion.choices[0].message.content
    assert_gateway_headers(raw.headers, model["region"], "explicit-model")
    assert sim_request_by_user(sim, marker)["body"]["model"] == model["id"]


def test_request_ids_are_unique_per_request(client):
    ids = set()
    for _ in range(3):
        raw = client.chat.completions.with_raw_response.create(
            model="auto-router", messages=[{"role": "user", "content": "hi"}])
        assert raw.parse().id == raw.headers["x-audit-trace-id"]
        ids.add(raw.parse().id)
    assert len(ids) == 3


def test_request_fields_reach_the_upstream_untouched(client, sim):
    marker = f"u-{uuid.uuid4().hex}"
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Weather in Riyadh?"}]}]
    sent = dict(
        messages=messages, temperature=0.25, top_p=0.9, max_tokens=64, seed=7, stop=["\n\n"],
        tools=tools, tool_choice="auto", response_format={"type": "json_object"}, user=marker,
    )
    extra = {"x_vendor_option": {"nested": [1, "two", None, True]}, "repetition_penalty": 1.1}
    completion = client.chat.completions.create(model="auto-router", extra_body=extra, **sent)
    assert completion.model == "jais-30b-chat"

    upstream = sim_request_by_user(sim, marker)
    assert upstream["path"] == "/v1/chat/completions"
    # Exactly the client's body, with only `model` rewritten to the serving model's upstream name;
    # nothing added (no `stream_options` on a non-streamed request), nothing dropped.
    assert upstream["body"] == {**sent, **extra, "model": "jais-30b-chat"}


def test_client_api_key_is_not_forwarded_upstream(client, sim, keys):
    marker = f"u-{uuid.uuid4().hex}"
    client.chat.completions.create(model="qwen2.5-coder-32b", user=marker,
                                   messages=[{"role": "user", "content": "hi"}])
    upstream = sim_request_by_user(sim, marker)
    assert upstream["authorization"] is None
    assert keys["member"] not in str(upstream)


@pytest.mark.parametrize("client_options", [None, {"include_usage": False}, {"include_usage": True}])
def test_streamed_request_asks_upstream_for_usage(client, sim, client_options):
    marker = f"u-{uuid.uuid4().hex}"
    kwargs = {} if client_options is None else {"stream_options": client_options}
    stream = client.chat.completions.create(
        model="auto-router", user=marker, stream=True, temperature=0.5,
        messages=[{"role": "user", "content": "hi"}], **kwargs)
    chunks = list(stream)
    assert chunks
    body = sim_request_by_user(sim, marker)["body"]
    assert body["model"] == "jais-30b-chat"
    assert body["stream"] is True
    assert body["stream_options"]["include_usage"] is True
    assert body["temperature"] == 0.5
    # Whatever the upstream was asked for, the client sees usage only if it asked.
    usage_chunks = [c for c in chunks if c.usage is not None]
    assert len(usage_chunks) == (1 if client_options == {"include_usage": True} else 0)


def test_other_stream_options_are_kept_when_usage_is_forced(http, sim):
    marker = f"u-{uuid.uuid4().hex}"
    r = http.post("/v1/chat/completions", json={
        "model": "allam-7b-instruct", "user": marker, "stream": True,
        "stream_options": {"include_usage": False, "x_keep_me": 3},
        "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200
    assert r.text.rstrip().endswith("data: [DONE]")
    body = sim_request_by_user(sim, marker)["body"]
    assert body["stream_options"] == {"include_usage": True, "x_keep_me": 3}


def test_usage_is_always_answered_even_when_the_upstream_reports_none(client, sim):
    """The gateway counts what it charges; clients (LangChain's usage_metadata, the AI SDK's
    usage) get those counts when the upstream sent none: on a whole answer, and as the last
    chunk of a stream that asked for it."""
    harness.sim_set(sim, "magistral-small", no_usage=True)
    try:
        whole = client.chat.completions.create(
            model="magistral-small", messages=[{"role": "user", "content": "Bonjour, ça va ?"}], seed=-1)
        assert whole.usage is not None and whole.usage.completion_tokens > 0, whole
        assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens
        stream = client.chat.completions.create(
            model="magistral-small", stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "Bonjour, ça va ?"}])
        chunks = list(stream)
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0, chunks[-1]
        assert chunks[-1].choices == []
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        # Without include_usage, no usage chunk.
        plain = list(client.chat.completions.create(
            model="magistral-small", stream=True, messages=[{"role": "user", "content": "Salut"}]))
        assert all(c.usage is None for c in plain)
    finally:
        harness.sim_set(sim, "magistral-small")


def test_structured_output_through_the_sdk_parse_helper(client):
    """The simulated fleet honours json_schema with a valid instance, so the SDK's `parse`
    helper (and the gateway's path for it) is tested without a real model."""
    from pydantic import BaseModel

    class Retention(BaseModel):
        record: str
        years: int
        mandatory: bool
        branches: list[str]

    parsed = client.chat.completions.parse(
        model="jais-30b-chat", response_format=Retention,
        messages=[{"role": "user", "content": "How long are customer records kept?"}])
    value = parsed.choices[0].message.parsed
    assert isinstance(value, Retention) and value.years >= 1 and value.branches, value
    plain = client.chat.completions.create(
        model="jais-30b-chat", response_format={"type": "json_object"},
        messages=[{"role": "user", "content": "Answer in JSON"}])
    import json as _json
    assert "answer" in _json.loads(plain.choices[0].message.content)


def test_a_tool_loop_runs_against_the_simulated_fleet(client):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    messages = [{"role": "user", "content": "What is the branch code?"}]
    first = client.chat.completions.create(model="qwen2.5-coder-32b", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls" and call.function.name == "lookup"
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "branch code RUH-042"}]
    second = client.chat.completions.create(model="qwen2.5-coder-32b", messages=messages, tools=tools)
    assert second.choices[0].finish_reason == "stop"
    assert "RUH-042" in second.choices[0].message.content
