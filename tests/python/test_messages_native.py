"""Native Messages upstreams (issue 45, point 4): a model declared `messages = "native"` (the
harness fleet's `qwen2.5-coder-32b`) gets `/v1/messages` requests passed through to the
upstream's own `/v1/messages` — the body as the client sent it, `anthropic-version` and
`anthropic-beta` forwarded, replayed thinking blocks unmodified — and every phase still applies:
the guardrail over the request and the answer (whole and streamed), the budget charged on the
upstream's own Messages usage, the journal, fallback between a native model and a chat one both
ways. Every stream is checked by the invariant parser (`messages_stream.py`).

The simulator's Messages door (`host/src/simulator/messages.rs`) answers like its chat door
("Hello! I am <model>, …"), counts usage as words + 1 per message (the system prompt is one
more), gives thinking blocks a `simsig-…` signature and refuses (400) a replayed thinking block
whose signature is not its own."""

from __future__ import annotations

import json

import anthropic
import httpx
import pytest

import harness
from messages_stream import check_stream, checked, raw_events

NATIVE = "qwen2.5-coder-32b"  # messages = "native" in the harness fleet; eu-frankfurt-1
EN = "llama-3.2-3b-instruct"  # translated to chat completions
SETTINGS = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})
CARD = "4111 1111 1111 1111"
WEATHER = {"name": "get_weather", "description": "Current weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
THINK = {"type": "enabled", "budget_tokens": 256}

answer = harness.english_answer


def sim_input_tokens(messages: list[dict], system: str = "") -> int:
    """The simulator's input count for string messages: words + 1 per message, system included."""
    return sum(len(m["content"].split()) + 1 for m in messages) + len(system.split()) + 1


@pytest.fixture(scope="module")
def gateway(sim, keys, tmp_path_factory):
    """The module's gateway: guarded, journaled; the native model and the chat one each other's
    fallback."""
    models = harness.fleet_models(sim.url, first_byte_timeout_ms=2000, stream_idle_timeout_ms=2000)
    assert next(m for m in models if m["id"] == NATIVE)["messages"] == "native"
    for m in models:
        if m["id"] in (NATIVE, EN):
            m["fallbacks"] = [EN if m["id"] == NATIVE else NATIVE]
    config = harness.gateway_config(
        models, keys["config"],
        extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\n",
        journal={"enabled": True},
    )
    p = harness.start_gateway(config, tmp_path_factory.mktemp("messages-native-gw"))
    yield p
    p.kill()


def last_request(sim) -> dict:
    return harness.sim_requests(sim)[-1]


# --- Passed through faithfully ------------------------------------------------------------------


def test_a_native_model_gets_the_body_as_sent_with_the_anthropic_headers(claude, sim):
    question = "What is the capital of France?"
    system = [{"type": "text", "text": "Answer briefly.", "cache_control": {"type": "ephemeral"}}]
    messages = [{"role": "user", "content": question}]
    raw = claude.messages.with_raw_response.create(
        model=NATIVE, max_tokens=200, system=system, messages=messages, metadata={"user_id": "alice"},
        extra_headers={"anthropic-version": "2023-06-01", "anthropic-beta": "interleaved-thinking-2025-05-14"},
        extra_body={"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}})
    m = raw.parse()
    assert m.model == NATIVE and m.id.startswith("msg_")
    assert [b.type for b in m.content] == ["text"] and m.content[0].text == answer(NATIVE, question)
    assert m.stop_reason == "end_turn"
    # The upstream's own usage, not the gateway's count.
    assert m.usage.input_tokens == sim_input_tokens(messages, "Answer briefly.")
    assert raw.headers["x-data-residency"] == harness.REGION[NATIVE]
    sent = last_request(sim)
    assert sent["path"] == "/v1/messages"
    assert sent["anthropic_version"] == "2023-06-01"
    assert sent["anthropic_beta"] == "interleaved-thinking-2025-05-14"
    body = sent["body"]
    assert body["model"] == NATIVE and body["max_tokens"] == 200 and body["messages"] == messages
    assert body["system"] == system and body["metadata"] == {"user_id": "alice"}
    assert body["context_management"] == {"edits": [{"type": "clear_tool_uses_20250919"}]}


def test_a_native_stream_with_thinking_keeps_the_rules_and_its_signature_replays(claude, http, sim):
    question = "Think, then answer."
    with claude.messages.stream(model=NATIVE, max_tokens=500, thinking=THINK,
                                messages=[{"role": "user", "content": question}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == answer(NATIVE, question)
    assert [b.type for b in final.content] == ["thinking", "text"]
    thinking = final.content[0]
    # The upstream's own signature comes back, so the block can be replayed to it.
    assert thinking.signature.startswith("simsig-") and NATIVE in thinking.thinking
    body = {"model": NATIVE, "max_tokens": 500, "stream": True, "thinking": THINK,
            "messages": [{"role": "user", "content": question}]}
    told = checked(http, body)
    assert [b["type"] for b in told["blocks"]] == ["thinking", "text"]
    assert told["blocks"][0]["signature"] == thinking.signature
    assert told["blocks"][1]["text"] == text
    assert told["delta"]["usage"]["input_tokens"] == sim_input_tokens(body["messages"])
    # message_start carries the upstream's own count of the prompt, not the gateway's estimate.
    assert told["start"]["usage"]["input_tokens"] == sim_input_tokens(body["messages"])
    # The next turn replays the thinking block; the upstream checks its signature.
    turn = [{"role": "user", "content": question},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]},
            {"role": "user", "content": "And then?"}]
    second = claude.messages.create(model=NATIVE, max_tokens=500, thinking=THINK, messages=turn)
    assert second.content[-1].text == answer(NATIVE, "And then?")
    replayed = last_request(sim)["body"]["messages"][1]["content"][0]
    assert replayed == {"type": "thinking", "thinking": thinking.thinking, "signature": thinking.signature}


def test_a_native_tool_round_trip_with_fragmented_input(claude, http, sim):
    harness.sim_set(sim, NATIVE, fragment_tool_arguments=True)
    ask = [{"role": "user", "content": "Weather in Riyadh?"}]
    first = claude.messages.create(model=NATIVE, max_tokens=200, tools=[WEATHER], messages=ask)
    assert first.stop_reason == "tool_use"
    call = next(b for b in first.content if b.type == "tool_use")
    assert call.name == "get_weather" and call.input == {"text": answer(NATIVE, "Weather in Riyadh?")}
    second = claude.messages.create(
        model=NATIVE, max_tokens=200, tools=[WEATHER],
        messages=[*ask, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                "content": "41 degrees and sunny"}]}])
    assert second.stop_reason == "end_turn" and "41 degrees and sunny" in second.content[0].text
    assert last_request(sim)["body"]["messages"][2]["content"][0]["tool_use_id"] == call.id
    told = checked(http, {"model": NATIVE, "max_tokens": 200, "stream": True, "tools": [WEATHER],
                          "messages": ask})
    streamed = next(b for b in told["blocks"] if b["type"] == "tool_use")
    assert streamed["input"] == call.input and streamed["id"] == call.id
    assert streamed["fragments"] > 1, "the upstream's fragments reach the client as fragments"
    assert told["delta"]["delta"]["stop_reason"] == "tool_use"
    with claude.messages.stream(model=NATIVE, max_tokens=200, tools=[WEATHER], messages=ask) as s:
        final = s.get_final_message()
    assert next(b for b in final.content if b.type == "tool_use").input == call.input


# --- Every phase applies ------------------------------------------------------------------------


def test_the_guardrail_blocks_a_card_before_a_native_upstream_sees_it(claude, sim):
    before = len([r for r in harness.sim_requests(sim) if r["path"] == "/v1/messages"])
    for kwargs in [
        {"messages": [{"role": "user", "content": f"my card is {CARD}"}]},
        {"messages": [{"role": "user", "content": "hello"}], "system": f"The card is {CARD}."},
        {"messages": [{"role": "user", "content": "Weather?"},
                      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather",
                                                         "input": {"city": "Riyadh", "note": CARD}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                    "content": "sunny"}]}]},
    ]:
        with pytest.raises(anthropic.BadRequestError) as e:
            claude.messages.create(model=NATIVE, max_tokens=50, **kwargs)
        assert e.value.body["error"]["type"] == "invalid_request_error", e.value.body
    after = len([r for r in harness.sim_requests(sim) if r["path"] == "/v1/messages"])
    assert after == before


def test_the_guardrail_redacts_what_a_native_upstream_gets_and_keeps_the_rest(claude, sim):
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "mail me at salem@example.sa", "cache_control": {"type": "ephemeral"}}]}]
    claude.messages.create(model=NATIVE, max_tokens=50, messages=messages)
    sent = last_request(sim)["body"]["messages"][0]["content"][0]
    assert "salem@example.sa" not in sent["text"] and "[EMAIL]" in sent["text"]
    assert sent["cache_control"] == {"type": "ephemeral"}


def test_the_guardrail_redacts_a_native_streamed_answer_and_the_blocks_stay_valid(claude, http, sim):
    harness.sim_reply(sim, NATIVE, "Reach Salem on +966 50 123 4567 today")
    try:
        told = checked(http, {"model": NATIVE, "max_tokens": 200, "stream": True,
                              "messages": [{"role": "user", "content": "Who do I call?"}]})
        text = told["blocks"][0]["text"]
        assert "123 4567" not in text and "[PHONE]" in text, text
        whole = claude.messages.create(model=NATIVE, max_tokens=200,
                                       messages=[{"role": "user", "content": "Who do I call?"}])
        assert "[PHONE]" in whole.content[0].text and "123 4567" not in whole.content[0].text
    finally:
        harness.sim_reply(sim, NATIVE, None)


def test_a_native_tool_input_streamed_in_fragments_is_held_checked_and_redacted_whole(http, sim):
    """The phone number is split across input_json_delta fragments upstream; the tool input is
    held until its block ends, redacted as a whole, and still parses to the input object."""
    harness.sim_set(sim, NATIVE, fragment_tool_arguments=True)
    harness.sim_reply(sim, NATIVE, "Call Salem on +966 50 123 4567 today")
    try:
        told = checked(http, {"model": NATIVE, "max_tokens": 200, "stream": True, "tools": [WEATHER],
                              "messages": [{"role": "user", "content": "Who do I call?"}]})
        call = next(b for b in told["blocks"] if b["type"] == "tool_use")
        assert set(call["input"]) == {"text"}, call
        assert "123 4567" not in call["input"]["text"] and "[PHONE]" in call["input"]["text"], call
    finally:
        harness.sim_reply(sim, NATIVE, None)


def new_team_key(admin: httpx.Client, **team) -> dict:
    r = admin.post("/v1/admin/teams", json={"name": "native-test", "plan": "enterprise", "budget": 10.0,
                                            **team})
    assert r.status_code == 201, r.text
    team = r.json()
    r = admin.post("/v1/admin/keys", json={"team_id": team["id"], "role": "member"})
    assert r.status_code == 201, r.text
    return {"team": team, "key": r.json()}


@pytest.mark.parametrize("model", [NATIVE, EN])
def test_the_budget_is_charged_on_the_upstreams_usage_native_or_translated(gateway, admin, model):
    made = new_team_key(admin)
    secret = made["key"]["key"]
    c = anthropic.Anthropic(base_url=gateway.url, api_key=secret, max_retries=0, timeout=20)
    ask = [{"role": "user", "content": "Charge me for this one please"}]
    plain = c.messages.create(model=model, max_tokens=200, messages=ask)
    with httpx.Client(base_url=gateway.url, headers={"x-api-key": secret}, timeout=20) as h:
        told = checked(h, {"model": model, "max_tokens": 200, "stream": True, "messages": ask})
    expected_in = plain.usage.input_tokens
    assert told["delta"]["usage"]["input_tokens"] == expected_in > 0
    if model == NATIVE:
        assert expected_in == sim_input_tokens(ask)

    def settled():
        r = admin.get("/v1/admin/usage", params={"key_id": made["key"]["id"]})
        assert r.status_code == 200, r.text
        return r.json() if r.json()["total"]["requests"] == 2 else None
    u = harness.wait_for(settled, what="two charged messages")
    assert u["total"]["tokens_in"] == 2 * expected_in
    assert u["total"]["tokens_out"] == plain.usage.output_tokens + told["delta"]["usage"]["output_tokens"]
    assert u["total"]["spend"] > 0 and {row["model"] for row in u["data"]} == {model}
    team = admin.get(f"/v1/admin/teams/{made['team']['id']}").json()
    assert team["spend"]["spent"] == pytest.approx(u["total"]["spend"]) and team["spend"]["reserved"] == 0


@pytest.mark.parametrize("model", [NATIVE, EN])
def test_an_exhausted_budget_and_residency_refuse_in_the_anthropic_shape(gateway, admin, model):
    """The budget phase (429 `rate_limit_error`, the SDK's RateLimitError) and the residency
    guard (451 `permission_error`) refuse a message in the Anthropic shape, native or translated."""
    poor = new_team_key(admin, budget=0.000001)["key"]["key"]
    c = anthropic.Anthropic(base_url=gateway.url, api_key=poor, max_retries=0, timeout=20)
    with pytest.raises(anthropic.RateLimitError) as e:
        c.messages.create(model=model, max_tokens=200, messages=[{"role": "user", "content": "hi"}])
    assert e.value.body["error"]["type"] == "rate_limit_error", e.value.body
    # A team bounded to the other model's region.
    elsewhere = "eu-frankfurt-1" if model == EN else "sa-riyadh-1"
    bounded = new_team_key(admin, allowed_regions=[elsewhere])["key"]["key"]
    c = anthropic.Anthropic(base_url=gateway.url, api_key=bounded, max_retries=0, timeout=20)
    with pytest.raises(anthropic.APIStatusError) as e:  # the SDK has no class of its own for 451
        c.messages.create(model=model, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 451 and e.value.body["error"]["type"] == "permission_error"



def test_the_journal_names_messages_create_with_the_native_usage(claude, admin):
    raw = claude.messages.with_raw_response.create(
        model=NATIVE, max_tokens=50, messages=[{"role": "user", "content": "journal me natively"}],
        metadata={"user_id": "alice"})
    m = raw.parse()
    request_id = raw.headers["request-id"]

    e = harness.journal_entries(admin, request_id)[0]
    assert e["action"] == "messages.create" and e["status"] == "success" and e["model"] == NATIVE
    assert e["actor_id"] == "alice"
    assert (e["prompt_tokens"], e["completion_tokens"]) == (m.usage.input_tokens, m.usage.output_tokens)


# --- Fallback between native and chat -----------------------------------------------------------


def test_a_failing_native_model_falls_back_to_a_chat_model_even_with_a_native_signature(claude, http, sim):
    harness.sim_set(sim, NATIVE, fail="error500")
    # A conversation carrying a native thinking block: a chat model cannot take its signature.
    turn = [{"role": "user", "content": "First question"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "native thoughts", "signature": "simsig-0123456789abcdef"},
                {"type": "text", "text": "First answer"}]},
            {"role": "user", "content": "Second question"}]
    m = claude.messages.create(model=NATIVE, max_tokens=200, thinking=THINK, messages=turn)
    assert m.model == EN and m.content[-1].text == answer(EN, "Second question")
    sent = last_request(sim)
    assert sent["path"] == "/v1/chat/completions" and sent["body"]["model"] == EN
    assert "simsig" not in json.dumps(sent["body"])
    told = checked(http, {"model": NATIVE, "max_tokens": 200, "stream": True, "messages": turn})
    assert told["blocks"][-1]["text"] == answer(EN, "Second question")


def test_a_failing_chat_model_falls_back_to_the_native_model(claude, http, sim):
    harness.sim_set(sim, EN, fail="error500")
    ask = [{"role": "user", "content": "Back the other way"}]
    m = claude.messages.create(model=EN, max_tokens=200, messages=ask)
    assert m.model == NATIVE and m.content[0].text == answer(NATIVE, "Back the other way")
    assert m.usage.input_tokens == sim_input_tokens(ask)
    sent = last_request(sim)
    assert sent["path"] == "/v1/messages" and sent["body"]["messages"] == ask
    events = raw_events(http, {"model": EN, "max_tokens": 200, "stream": True, "messages": ask})
    told = check_stream(events)
    assert events[0][1]["message"]["model"] == NATIVE
    assert told["blocks"][0]["text"] == answer(NATIVE, "Back the other way")
