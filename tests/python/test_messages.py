"""The Anthropic Messages API (`/v1/messages`, issue 45) through the real binary and the official
`anthropic` SDK on its defaults (`x-api-key`), translated to chat completions for the simulated
fleet: plain and streamed messages (the `messages.stream` helper and the raw events, every stream
checked by the same invariant parser), a tool round trip, fields clients keep adding, errors in
the Anthropic shape from every layer, the guardrail over what goes upstream, and the journal.

One gateway for the module, with the PII guardrail (cards blocked, the rest redacted) and the
journal on, in front of the session's simulated fleet. `llama-3.2-3b-instruct` answers in
English: "Hello! I am <model>, served from region <r>. You asked: "<last user text>"." (after a
tool's result, it echoes it)."""

from __future__ import annotations

import json

import anthropic
import httpx
import pytest

import harness

EN = "llama-3.2-3b-instruct"  # sa-riyadh-1
REGION = harness.REGION
SETTINGS = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})
CARD = "4111 1111 1111 1111"
WEATHER = {"name": "get_weather", "description": "Current weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}


answer = harness.english_answer


@pytest.fixture(scope="module")
def gateway(sim, keys, tmp_path_factory):
    """Overrides conftest's: the module's one gateway, guarded and journaled."""
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=2000, stream_idle_timeout_ms=2000),
        keys["config"],
        server={"header_read_timeout_ms": 1000, "body_read_timeout_ms": 2000, "max_body_bytes": 1048576},
        extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\n",
        journal={"enabled": True},
    )
    p = harness.start_gateway(config, tmp_path_factory.mktemp("messages-gw"))
    yield p
    p.kill()


@pytest.fixture
def claude(gateway, keys):
    """The official SDK as a coding agent configures it: base URL and key (sent as x-api-key)."""
    return anthropic.Anthropic(base_url=gateway.url, api_key=keys["member"], max_retries=0, timeout=20)


@pytest.fixture
def admin(gateway, keys):
    with httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {keys['admin']}"},
                      timeout=20) as c:
        yield c


def check_stream(events: list[tuple[str, dict]]) -> dict:
    """The stream rules clients depend on; returns the blocks as the client rebuilds them."""
    names = [e for e, _ in events]
    assert names.count("message_start") == 1 and names[0] == "message_start", names
    assert events[0][1]["message"]["usage"]["input_tokens"] > 0, "message_start with zero usage"
    for name, data in events:
        assert data["type"] == name, (name, data)
    open_index, next_index, blocks = None, 0, {}
    for name, data in events:
        if name == "content_block_start":
            assert open_index is None, "a block started inside another"
            assert data["index"] == next_index, data
            open_index, next_index = data["index"], next_index + 1
            blocks[open_index] = {**data["content_block"], "partial": ""}
        elif name == "content_block_delta":
            assert data["index"] == open_index, "a delta outside its open block"
            d = data["delta"]
            block = blocks[open_index]
            if d["type"] == "text_delta":
                assert block["type"] == "text"
                block["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                assert block["type"] == "tool_use"
                block["partial"] += d["partial_json"]
            elif d["type"] == "thinking_delta":
                assert block["type"] == "thinking"
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
        elif name == "content_block_stop":
            assert data["index"] == open_index, data
            block = blocks[open_index]
            if block["type"] == "tool_use" and block["partial"]:
                block["input"] = json.loads(block["partial"])
                assert block["input"] != {}, "streamed arguments ended as {}"
            if block["type"] == "thinking":
                assert block.get("signature"), "a thinking block without its signature"
            open_index = None
    assert open_index is None, "a block never stopped"
    if "error" not in names:
        delta = names.index("message_delta")
        assert names[delta + 1:] == ["message_stop"], names
        assert events[delta][1]["delta"]["stop_reason"] is not None
    return {"blocks": [blocks[i] for i in sorted(blocks)],
            "delta": next((d for n, d in events if n == "message_delta"), None)}


def raw_events(http_client: httpx.Client, body: dict, headers: dict) -> list[tuple[str, dict]]:
    events, name = [], None
    with http_client.stream("POST", "/v1/messages", json=body, headers=headers) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[len("data: "):])))
    return events


# --- A message, plain and streamed ---------------------------------------------------------------


def test_a_message_is_answered_in_the_messages_shape_with_the_routed_model_and_real_usage(claude, sim):
    raw = claude.messages.with_raw_response.create(
        model=EN, max_tokens=200, system=[{"type": "text", "text": "Answer briefly."}],
        messages=[{"role": "user", "content": "What is the capital of France?"}],
        metadata={"user_id": "alice"})
    m = raw.parse()
    assert m.id.startswith("msg_") and m.type == "message" and m.role == "assistant"
    assert m.model == EN
    assert [b.type for b in m.content] == ["text"]
    assert m.content[0].text == answer(EN, "What is the capital of France?")
    assert m.stop_reason == "end_turn" and m.stop_sequence is None
    assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0
    assert raw.headers["request-id"] == raw.headers["x-audit-trace-id"]
    assert raw.headers["x-route-policy"] and raw.headers["x-data-residency"] == REGION[EN]
    sent = harness.sim_requests(sim)[-1]["body"]
    assert sent["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert sent["user"] == "alice" and sent["max_tokens"] == 200


def test_the_stream_helper_gives_the_same_text_and_the_raw_stream_keeps_the_rules(claude, http):
    question = "Stream me the answer."
    with claude.messages.stream(model=EN, max_tokens=200,
                                messages=[{"role": "user", "content": question}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == answer(EN, question) == final.content[0].text
    assert final.usage.output_tokens > 0 and final.stop_reason == "end_turn"
    body = {"model": EN, "max_tokens": 200, "stream": True,
            "messages": [{"role": "user", "content": question}]}
    told = check_stream(raw_events(http, body, {}))
    assert told["blocks"][0]["text"] == text
    assert told["delta"]["usage"]["output_tokens"] > 0


def test_a_tool_round_trip_gives_tool_use_with_its_input_then_the_result_is_answered(claude, http):
    first = claude.messages.create(model=EN, max_tokens=200, tools=[WEATHER],
                                   messages=[{"role": "user", "content": "Weather in Riyadh?"}])
    assert first.stop_reason == "tool_use"
    call = next(b for b in first.content if b.type == "tool_use")
    assert call.name == "get_weather" and isinstance(call.input, dict) and call.input, call
    second = claude.messages.create(
        model=EN, max_tokens=200, tools=[WEATHER],
        messages=[{"role": "user", "content": "Weather in Riyadh?"},
                  {"role": "assistant", "content": [b.model_dump() for b in first.content]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                "content": "41 degrees and sunny"}]}])
    assert second.stop_reason == "end_turn"
    assert "41 degrees and sunny" in second.content[0].text
    # Streamed, the tool input arrives as input_json_delta fragments that parse to the input.
    body = {"model": EN, "max_tokens": 200, "stream": True, "tools": [WEATHER],
            "messages": [{"role": "user", "content": "Weather in Riyadh?"}]}
    told = check_stream(raw_events(http, body, {}))
    streamed = next(b for b in told["blocks"] if b["type"] == "tool_use")
    assert streamed["input"] == call.input and streamed["name"] == "get_weather"
    assert told["delta"]["delta"]["stop_reason"] == "tool_use"


def test_fields_clients_keep_adding_are_accepted_and_bearer_auth_works(gateway, keys, sim):
    body = {"model": EN, "max_tokens": 50,
            "system": [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Hi there", "cache_control": {"type": "ephemeral"}}]}],
            "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
            "output_config": {"effort": "high"}, "thinking": {"type": "adaptive"},
            "tools": [{**WEATHER, "input_examples": [{"city": "Paris"}]}],
            "service_tier": "auto"}
    headers = {"Authorization": f"Bearer {keys['member']}", "anthropic-version": "2023-06-01",
               "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"}
    r = httpx.post(f"{gateway.url}/v1/messages?beta=true", json=body, headers=headers, timeout=20)
    assert r.status_code == 200, r.text
    sent = harness.sim_requests(sim)[-1]["body"]
    assert not {"context_management", "output_config", "thinking", "service_tier"} & set(sent)


# --- Errors in the Anthropic shape ----------------------------------------------------------------


def test_errors_from_every_layer_come_in_the_anthropic_shape_with_the_sdk_classes(gateway, claude):
    bad_key = anthropic.Anthropic(base_url=gateway.url, api_key="sk-sov-wrong", max_retries=0)
    cases = [
        (lambda: bad_key.messages.create(model=EN, max_tokens=10, messages=[{"role": "user", "content": "x"}]),
         anthropic.AuthenticationError, "authentication_error"),
        (lambda: claude.messages.create(model=EN, max_tokens=10, messages=[]),
         anthropic.BadRequestError, "invalid_request_error"),
        (lambda: claude.messages.create(model="no-such-model", max_tokens=10,
                                        messages=[{"role": "user", "content": "x"}]),
         anthropic.NotFoundError, "not_found_error"),
        (lambda: claude.messages.create(model=EN, max_tokens=10, messages=[
            {"role": "user", "content": [{"type": "video", "source": {}}]}]),
         anthropic.BadRequestError, "invalid_request_error"),
    ]
    for call, cls, kind in cases:
        with pytest.raises(cls) as e:
            call()
        body = e.value.body
        assert body["type"] == "error" and body["error"]["type"] == kind, body
        assert body["error"]["message"] and body["request_id"].startswith("req-"), body
        assert e.value.response.headers["request-id"] == body["request_id"]
    r = httpx.post(f"{gateway.url}/v1/messages", content=b"{", timeout=10,
                   headers={"x-api-key": claude.api_key, "content-type": "application/json"})
    assert r.status_code == 400 and r.json()["type"] == "error", r.text


def test_other_routes_keep_the_openai_error_shape(http):
    r = http.post("/v1/chat/completions", json={"model": EN})
    assert r.status_code == 400 and set(r.json()) == {"error"}
    assert "request-id" not in r.headers


# --- Every phase applies ----------------------------------------------------------------------


def test_the_guardrail_blocks_a_card_in_text_system_and_tool_results(claude):
    for messages, system in [
        ([{"role": "user", "content": f"my card is {CARD}"}], None),
        ([{"role": "user", "content": "hello"}], f"The customer's card is {CARD}."),
        ([{"role": "user", "content": "Weather?"},
          {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather",
                                             "input": {"city": "Riyadh"}}]},
          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                        "content": [{"type": "text", "text": f"card on file {CARD}"}]}]}],
         None),
    ]:
        kwargs = {"system": system} if system else {}
        with pytest.raises(anthropic.BadRequestError) as e:
            claude.messages.create(model=EN, max_tokens=50, messages=messages, **kwargs)
        assert e.value.body["error"]["type"] == "invalid_request_error", e.value.body


def test_the_journal_names_the_operation_messages_create(claude, admin):
    raw = claude.messages.with_raw_response.create(
        model=EN, max_tokens=50, messages=[{"role": "user", "content": "journal me"}],
        metadata={"user_id": "alice"})
    m = raw.parse()
    request_id = raw.headers["request-id"]

    def found():
        r = admin.post("/v1/activity/logs", json={"request_id": request_id})
        assert r.status_code == 200, r.text
        return r.json()["data"]
    entries = harness.wait_for(found, what=f"the journal entry of {request_id}")
    e = entries[0]
    assert e["action"] == "messages.create" and e["status"] == "success" and e["auth"] == "key"
    assert e["model"] == EN and e["actor_id"] == "alice"
    assert (e["prompt_tokens"], e["completion_tokens"]) == (m.usage.input_tokens, m.usage.output_tokens)
