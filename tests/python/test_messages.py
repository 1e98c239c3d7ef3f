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
from messages_stream import check_stream, raw_events

EN = "llama-3.2-3b-instruct"  # sa-riyadh-1
REGION = harness.REGION
SETTINGS, CARD, WEATHER = harness.GUARD_CARDS_BLOCKED, harness.CARD, harness.WEATHER_TOOL


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


def test_reasoning_and_fragmented_tool_arguments_from_a_chat_stream_keep_the_block_rules(claude, http, sim):
    """The chat stream peers broke on: `reasoning_content` deltas before the answer and tool-call
    arguments in many small deltas. The reasoning is its own signed thinking block, closed before
    the tool block; the fragments concatenate to the tool input, never `{}`."""
    harness.sim_set(sim, EN, reasoning=True, fragment_tool_arguments=True)
    body = {"model": EN, "max_tokens": 200, "stream": True, "tools": [WEATHER],
            "messages": [{"role": "user", "content": "Weather in Jeddah?"}]}
    told = check_stream(raw_events(http, body, {}))
    assert [b["type"] for b in told["blocks"]] == ["thinking", "tool_use"]
    thinking, call = told["blocks"]
    assert EN in thinking["thinking"] and thinking["signature"].startswith("sovereign:")
    assert call["input"] == {"text": answer(EN, "Weather in Jeddah?")}
    # The arguments came in many deltas, and reached the client as many fragments.
    assert harness.sim_requests(sim)[-1]["path"] == "/v1/chat/completions"
    assert call["fragments"] > 1, call
    # The whole answer and the stream helper agree.
    whole = claude.messages.create(model=EN, max_tokens=200, tools=[WEATHER],
                                   messages=[{"role": "user", "content": "Weather in Jeddah?"}])
    assert [b.type for b in whole.content] == ["thinking", "tool_use"]
    assert whole.content[0].thinking == thinking["thinking"] and whole.content[1].input == call["input"]
    with claude.messages.stream(model=EN, max_tokens=200,
                                messages=[{"role": "user", "content": "Think first."}]) as s:
        final = s.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[1].text == answer(EN, "Think first.")
    told = check_stream(raw_events(http, {"model": EN, "max_tokens": 200, "stream": True,
                                          "messages": [{"role": "user", "content": "Think first."}]}, {}))
    assert [b["type"] for b in told["blocks"]] == ["thinking", "text"]
    assert told["blocks"][0]["signature"] == final.content[0].signature


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
    harness.raises_anthropic_errors(cases)
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

    entries = harness.journal_entries(admin, request_id)
    e = entries[0]
    assert e["action"] == "messages.create" and e["status"] == "success" and e["auth"] == "key"
    assert e["model"] == EN and e["actor_id"] == "alice"
    assert (e["prompt_tokens"], e["completion_tokens"]) == (m.usage.input_tokens, m.usage.output_tokens)


def test_the_guardrail_redacts_reasoning_whole_and_streamed_on_messages_and_chat(claude, http, sim):
    """What a model thinks reaches the client too (a thinking block, `reasoning_content`): the
    output stage checks it like the answer. The simulated model thinks its fixed answer through
    first, so the e-mail address is in its reasoning and its text."""
    harness.sim_set(sim, EN, reasoning=True)
    harness.sim_reply(sim, EN, "Write to salem@example.sa today")
    question = [{"role": "user", "content": "Whom do I write to?"}]
    try:
        whole = claude.messages.create(model=EN, max_tokens=200, messages=question)
        assert [b.type for b in whole.content] == ["thinking", "text"]
        for said in (whole.content[0].thinking, whole.content[1].text):
            assert "salem@example.sa" not in said and "[EMAIL]" in said, said
        told = check_stream(raw_events(http, {"model": EN, "max_tokens": 200, "stream": True,
                                              "messages": question}, {}))
        thinking, text = told["blocks"]
        assert "salem@example.sa" not in thinking["thinking"] and "[EMAIL]" in thinking["thinking"]
        assert thinking["signature"].startswith("sovereign:")
        assert "salem@example.sa" not in text["text"] and "[EMAIL]" in text["text"]
        # Chat completions: `reasoning_content`, whole and streamed.
        r = http.post("/v1/chat/completions", json={"model": EN, "messages": question})
        assert r.status_code == 200, r.text
        reasoning = r.json()["choices"][0]["message"]["reasoning_content"]
        assert "salem@example.sa" not in reasoning and "[EMAIL]" in reasoning, reasoning
        streamed = ""
        with http.stream("POST", "/v1/chat/completions",
                         json={"model": EN, "messages": question, "stream": True}) as s:
            for line in s.iter_lines():
                if line.startswith("data: {"):
                    delta = json.loads(line[6:])["choices"][0]["delta"] if json.loads(line[6:])["choices"] else {}
                    streamed += delta.get("reasoning_content") or ""
        assert "salem@example.sa" not in streamed and "[EMAIL]" in streamed, streamed
    finally:
        harness.sim_reply(sim, EN, None)


def test_a_card_in_the_reasoning_blocks_the_answer_whole_and_streamed(claude, http, sim):
    harness.sim_set(sim, EN, reasoning=True)
    harness.sim_reply(sim, EN, f"Pay with {CARD}")
    question = [{"role": "user", "content": "How do I pay?"}]
    try:
        with pytest.raises(anthropic.APIStatusError) as e:
            claude.messages.create(model=EN, max_tokens=200, messages=question)
        assert "credit_card" in e.value.body["error"]["message"], e.value.body
        events = raw_events(http, {"model": EN, "max_tokens": 200, "stream": True,
                                   "messages": question}, {})
        check_stream(events)
        assert events[-1][0] == "error", events[-3:]
        said = "".join(d["delta"].get("thinking", "") + d["delta"].get("text", "")
                       for n, d in events if n == "content_block_delta")
        assert CARD not in said and CARD.replace(" ", "") not in said, said
    finally:
        harness.sim_reply(sim, EN, None)
