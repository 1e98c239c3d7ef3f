"""Issue 6 through the real binary: the PII guardrail (a Wasm component) blocks, redacts or flags
per entity, the upstream never sees redacted values, a flagged request stays on local models, and
answers are checked too."""

from __future__ import annotations

import json

import openai

import httpx
import pytest

import harness

SETTINGS = json.dumps({
    "default": "redact",
    "entities": {"credit_card": "block", "saudi_id": "flag", "ip_address": "off"},
})


@pytest.fixture(params=["fresh", "warm"])
def guarded(sim, gateway_factory, tmp_path, request):
    """A guardrail gateway, once with a fresh instance per check and once with a warm pool
    (instances reused, settings parsed once): every test holds for both."""
    doc = tmp_path / "routing.yaml"
    doc.write_text("name: guard-test\nroutes: []\ndefault: qwen2.5-coder-32b\n")
    return gateway_factory(harness.fleet_models(sim.url), routing={"document": str(doc)},
                           default_model="qwen2.5-coder-32b",
                           extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\n"
                           f"pool = \"{request.param}\"\n",
                           journal={"enabled": True})


def chat(gw, keys, content, model="auto-router", **extra):
    return httpx.post(f"{gw.url}/v1/chat/completions",
                      headers={"Authorization": f"Bearer {keys['member']}"},
                      json={"model": model, "messages": [{"role": "user", "content": content}], **extra},
                      timeout=30)


def last_upstream_prompt(sim) -> str:
    reqs = harness.sim_requests(sim)
    return json.dumps(reqs[-1], ensure_ascii=False)


def test_a_card_number_blocks_the_request_with_400_and_the_seed_event(guarded, keys, sim):
    before = harness.sim_stats(sim)["requests"]
    r = chat(guarded, keys, "charge my card 4111 1111 1111 1111 please, and mail me at a@example.com")
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "guardrail_violation" and err["code"] == "pii_detected"
    assert "credit_card" in err["message"] and "4111" not in err["message"]
    assert harness.sim_stats(sim)["requests"] == before, "a blocked request never reaches a model"
    # The journal records it as blocked.
    with httpx.Client(base_url=guarded.url, headers={"Authorization": f"Bearer {keys['admin']}"}) as a:
        logs = a.post("/v1/activity/logs", json={"request_id": r.headers["x-audit-trace-id"]}).json()
        assert [e["status"] for e in logs["data"]] == ["blocked"]


def test_redacted_values_never_reach_the_upstream(guarded, keys, sim):
    r = chat(guarded, keys, "اتصل بي على ٠٥٠١٢٣٤٥٦٧ أو راسلني على salem@example.sa")
    assert r.status_code == 200, r.text
    sent = last_upstream_prompt(sim)
    assert "salem@example.sa" not in sent and "0501234567" not in sent and "٠٥٠١٢٣٤٥٦٧" not in sent
    assert "[EMAIL]" in sent and "[PHONE]" in sent


def test_tool_call_arguments_and_tool_results_are_checked_too(guarded, keys, sim):
    messages = [
        {"role": "user", "content": "Look the customer up."},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"email": "rania@example.org"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Customer phone: +966 50 123 4567"},
    ]
    r = httpx.post(f"{guarded.url}/v1/chat/completions", headers={"Authorization": f"Bearer {keys['member']}"},
                   json={"model": "jais-30b-chat", "messages": messages}, timeout=30)
    assert r.status_code == 200, r.text
    sent = harness.sim_requests(sim)[-1]["body"]["messages"]
    args = json.loads(sent[1]["tool_calls"][0]["function"]["arguments"])
    assert args == {"email": "[EMAIL]"}, args
    assert "4567" not in sent[2]["content"] and "[PHONE]" in sent[2]["content"], sent[2]
    # A card number in a tool result blocks like one in a user message.
    messages[2]["content"] = "card on file: 4111 1111 1111 1111"
    r = httpx.post(f"{guarded.url}/v1/chat/completions", headers={"Authorization": f"Bearer {keys['member']}"},
                   json={"model": "jais-30b-chat", "messages": messages}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "pii_detected", r.text


def test_tool_call_arguments_the_model_writes_are_checked_on_the_way_out(guarded, keys, sim):
    # The simulator answers a request that offers tools with a call whose arguments carry its text.
    sim_reply(sim, "jais-30b-chat", "Reach Salem on +966 50 123 4567 today")
    try:
        client = openai.OpenAI(base_url=f"{guarded.url}/v1", api_key=keys["member"])
        answer = client.chat.completions.create(
            model="jais-30b-chat", messages=[{"role": "user", "content": "Who should I call?"}],
            tools=[{"type": "function", "function": {"name": "dial", "parameters": {"type": "object"}}}])
        call = answer.choices[0].message.tool_calls[0]
        assert answer.choices[0].finish_reason == "tool_calls"
        args = json.loads(call.function.arguments)
        assert "4567" not in args["text"] and "[PHONE]" in args["text"], args
    finally:
        sim_reply(sim, "jais-30b-chat", None)


def test_streamed_tool_call_arguments_are_checked_whole(guarded, keys, sim):
    client = openai.OpenAI(base_url=f"{guarded.url}/v1", api_key=keys["member"])
    tools = [{"type": "function", "function": {"name": "dial", "parameters": {"type": "object"}}}]
    sim_reply(sim, "jais-30b-chat", "Reach Salem on +966 50 123 4567 today")
    try:
        chunks = list(client.chat.completions.create(
            model="jais-30b-chat", stream=True, tools=tools,
            messages=[{"role": "user", "content": "Who should I call?"}]))
        args = "".join(tc.function.arguments or "" for c in chunks if c.choices
                       for tc in (c.choices[0].delta.tool_calls or []))
        assert "4567" not in args and "[PHONE]" in json.loads(args)["text"], args
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
        # A card number in the arguments ends the stream with the error event.
        sim_reply(sim, "jais-30b-chat", "Charge 4111 1111 1111 1111 now")
        with pytest.raises(openai.APIError):
            list(client.chat.completions.create(
                model="jais-30b-chat", stream=True, tools=tools,
                messages=[{"role": "user", "content": "Pay it"}]))
    finally:
        sim_reply(sim, "jais-30b-chat", None)


def test_embedding_input_is_checked_before_it_leaves(guarded, keys, sim):
    client = openai.OpenAI(base_url=f"{guarded.url}/v1", api_key=keys["member"])
    client.embeddings.create(model="multilingual-e5-small",
                             input=["write to salem@example.sa", "no personal data here"])
    sent = harness.sim_requests(sim)[-1]["body"]["input"]
    assert sent == ["write to [EMAIL]", "no personal data here"], sent
    before = harness.sim_stats(sim)["requests"]
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="multilingual-e5-small", input="card 4111 1111 1111 1111")
    assert e.value.code == "pii_detected"
    assert harness.sim_stats(sim)["requests"] == before, "a blocked input never reaches the model"


def test_token_array_embedding_input_is_decoded_and_checked(guarded, keys, sim):
    """LangChain's OpenAIEmbeddings sends cl100k_base token arrays by default: they are decoded
    and checked; tokens cannot be redacted, so personal data in them is refused."""
    client = openai.OpenAI(base_url=f"{guarded.url}/v1", api_key=keys["member"])
    before = harness.sim_stats(sim)["requests"]
    # cl100k_base ids (tiktoken-rs; the Python tiktoken fetches its tables at run time):
    # "pay with card 4111 1111 1111 1111" (blocked) and "mail salem@example.sa the report"
    # (redacted, which tokens cannot be).
    card = [14214, 449, 3786, 220, 17337, 16, 220, 5037, 16, 220, 5037, 16, 220, 5037, 16]
    mail = [3796, 829, 3516, 36587, 54762, 279, 1934]
    for tokens in [card, mail]:
        with pytest.raises(openai.BadRequestError) as e:
            client.embeddings.create(model="multilingual-e5-small", input=[tokens])
        assert e.value.code == "pii_detected", e.value.body
    assert harness.sim_stats(sim)["requests"] == before
    ok = client.embeddings.create(model="multilingual-e5-small", input=[[1820, 51534, 1934]])
    assert len(ok.data) == 1


def test_a_flagged_request_is_sensitive_and_stays_local(guarded, keys):
    # A Saudi national id (flag): the rules would send this to a cloud model.
    r = chat(guarded, keys, "my national id is 1712345675, what documents do I need?")
    assert r.status_code == 200, r.text
    local = {m["id"] for m in harness.FLEET if m["local"]}
    assert r.json()["model"] in local, r.json()["model"]
    # Without personal data the rules' cloud choice stands.
    r = chat(guarded, keys, "what documents do I need for a passport?")
    assert r.status_code == 200 and r.json()["model"] == "qwen2.5-coder-32b"


def test_entities_switched_off_pass_untouched(guarded, keys, sim):
    r = chat(guarded, keys, "the server 10.1.2.3 is down", model="jais-30b-chat")
    assert r.status_code == 200
    assert "10.1.2.3" in last_upstream_prompt(sim)


def test_the_guardrail_is_swapped_at_run_time_without_a_restart(guarded, keys):
    import base64
    admin = {"Authorization": f"Bearer {keys['admin']}"}
    ask = "mail me at hala@example.com"
    assert chat(guarded, keys, ask, model="jais-30b-chat").status_code == 200  # redacted
    before = httpx.get(f"{guarded.url}/v1/admin/guardrail", headers=admin).json()
    r = httpx.post(f"{guarded.url}/v1/admin/guardrail", headers=admin,
                   json={"settings": {"default": "redact", "entities": {"email": "block"}}})
    assert r.status_code == 200, r.text
    assert r.json()["component_sha256"] == before["component_sha256"]
    blocked = chat(guarded, keys, ask, model="jais-30b-chat")
    assert blocked.status_code == 400 and "email" in blocked.json()["error"]["message"]
    # A component of the wrong world is refused at upload; the active guardrail stays.
    router = (harness.REPO / "target" / "examples" / "rust_router.wasm").read_bytes()
    r = httpx.post(f"{guarded.url}/v1/admin/guardrail", headers=admin,
                   json={"component_base64": base64.b64encode(router).decode()})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_policy"
    # Settings the guardrail cannot read are refused too (its smoke call fails).
    r = httpx.post(f"{guarded.url}/v1/admin/guardrail", headers=admin,
                   json={"settings": {"entities": {"mail": "block"}}})
    assert r.status_code == 400, r.text
    assert chat(guarded, keys, ask, model="jais-30b-chat").status_code == 400
    # Members cannot swap it.
    r = httpx.post(f"{guarded.url}/v1/admin/guardrail",
                   headers={"Authorization": f"Bearer {keys['member']}"}, json={"settings": {}})
    assert r.status_code == 403


def sim_reply(sim, model, text):
    httpx.put(f"{sim.url}/_sim/replies/{model}", json={"text": text}).raise_for_status()


def stream_text(gw, keys, content, model="jais-30b-chat"):
    """The streamed answer's text and its events (data lines)."""
    events = []
    with httpx.stream("POST", f"{gw.url}/v1/chat/completions",
                      headers={"Authorization": f"Bearer {keys['member']}"},
                      json={"model": model, "stream": True,
                            "messages": [{"role": "user", "content": content}]}, timeout=30) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
    text = "".join(json.loads(e)["choices"][0]["delta"].get("content") or ""
                   for e in events if e.startswith("{") and json.loads(e).get("choices"))
    return text, events


def test_answers_are_redacted_whole_and_streamed_even_when_an_entity_is_split(guarded, keys, sim):
    # The simulator streams one word per chunk: the number arrives in four chunks.
    answer = "Sure, call our office on +966 50 123 4567 during working hours."
    sim_reply(sim, "jais-30b-chat", answer)
    try:
        whole = chat(guarded, keys, "how do I reach you?", model="jais-30b-chat")
        assert whole.status_code == 200
        text = whole.json()["choices"][0]["message"]["content"]
        assert "4567" not in text and "[PHONE]" in text, text
        streamed, events = stream_text(guarded, keys, "how do I reach you?")
        assert events[-1] == "[DONE]"
        assert "4567" not in streamed and "123" not in streamed and "[PHONE]" in streamed, streamed
        assert streamed.startswith("Sure, call our office on") and streamed.endswith("working hours.")
    finally:
        sim_reply(sim, "jais-30b-chat", None)


def test_a_redacted_stream_keeps_its_finish_reason_when_it_came_with_the_last_text(guarded, keys, sim):
    # A TGI-style stream: the last content chunk carries finish_reason, right after the entity.
    sim_reply(sim, "jais-30b-chat", "Call our office on +966 50 123 4567")
    harness.sim_set(sim, "jais-30b-chat", finish_with_last_token=True)
    try:
        streamed, events = stream_text(guarded, keys, "how do I reach you?")
        assert "4567" not in streamed and "[PHONE]" in streamed, streamed
        chunks = [json.loads(e) for e in events if e.startswith("{")]
        finishes = [c["choices"][0]["finish_reason"] for c in chunks
                    if c.get("choices") and c["choices"][0].get("finish_reason")]
        assert finishes == ["stop"], events
        assert events[-1] == "[DONE]"
        # The official SDK sees it too.
        client = openai.OpenAI(base_url=f"{guarded.url}/v1", api_key=keys["member"])
        stream = client.chat.completions.create(
            model="jais-30b-chat", stream=True, messages=[{"role": "user", "content": "again?"}])
        reasons = [c.choices[0].finish_reason for c in stream if c.choices]
        assert reasons[-1] == "stop", reasons
    finally:
        harness.sim_set(sim, "jais-30b-chat")
        sim_reply(sim, "jais-30b-chat", None)


def test_a_blocked_entity_in_a_stream_ends_it_with_an_error_event(guarded, keys, sim):
    sim_reply(sim, "jais-30b-chat", "Your card is 4111 1111 1111 1111 and it expires soon, so renew it.")
    try:
        streamed, events = stream_text(guarded, keys, "what is my card?")
        last = json.loads(events[-1])
        assert last["error"]["type"] == "guardrail_violation" and last["error"]["code"] == "pii_in_output"
        assert "[DONE]" not in events
        assert "1111" not in streamed
        whole = chat(guarded, keys, "what is my card?", model="jais-30b-chat")
        assert whole.status_code == 400 and whole.json()["error"]["code"] == "pii_in_output"
    finally:
        sim_reply(sim, "jais-30b-chat", None)


# Large inputs (issue 19): the guardrail's deadline and memory grow with the text, so a prompt
# near the 4 MiB body limit is checked, not refused by a timer; past `max_scanned_mib` it is a 413.

def large_prompt(size: int, needle: str) -> str:
    """About `size` bytes of mixed Arabic and English text with `needle` in the middle."""
    unit = "تقرير الربع الثالث عن المبيعات في الرياض وجدة. Quarterly sales report for the region. "
    half = unit * (size // 2 // len(unit.encode()))
    return half + needle + " " + half


def test_a_3_5_mb_arabic_and_english_prompt_with_a_card_number_is_blocked_not_timed_out(guarded, keys, sim):
    before = harness.sim_stats(sim)["requests"]
    prompt = large_prompt(3_500_000, "ادفع بالبطاقة 4111 1111 1111 1111 اليوم")
    assert 3_400_000 < len(prompt.encode()) < 4 << 20
    r = chat(guarded, keys, prompt, model="qwen2.5-coder-32b")
    assert r.status_code == 400, r.text[:500]
    err = r.json()["error"]
    assert (err["type"], err["code"]) == ("guardrail_violation", "pii_detected"), err
    assert "credit_card" in err["message"]
    assert harness.sim_stats(sim)["requests"] == before


def test_a_3_5_mb_prompt_with_an_email_is_redacted_and_sent(guarded, keys, sim):
    prompt = large_prompt(3_500_000, "write to salem@example.sa")
    r = chat(guarded, keys, prompt, model="qwen2.5-coder-32b")
    assert r.status_code == 200, r.text[:500]
    sent = harness.sim_requests(sim)[-1]["body"]["messages"][0]["content"]
    assert "salem@example.sa" not in sent and len(sent) > 1_000_000


@pytest.fixture
def scan_capped(sim, gateway_factory, tmp_path):
    """A guardrail that checks at most 1 MiB of text per call."""
    return gateway_factory(harness.fleet_models(sim.url), default_model="qwen2.5-coder-32b",
                           extra=harness.UNLIMITED
                           + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\nmax_scanned_mib = 1\n",
                           journal={"enabled": True})


def test_more_text_than_the_guardrail_scans_is_a_clear_413(scan_capped, keys, sim):
    before = harness.sim_stats(sim)["requests"]
    r = chat(scan_capped, keys, large_prompt(1_500_000, "nothing personal"), model="qwen2.5-coder-32b")
    assert r.status_code == 413, r.text[:500]
    err = r.json()["error"]
    assert (err["type"], err["code"]) == ("invalid_request_error", "too_large_to_scan"), err
    assert "max_scanned_mib" in err["message"]
    assert harness.sim_stats(sim)["requests"] == before
    # Just under the cap is checked and passes.
    r = chat(scan_capped, keys, large_prompt(900_000, "nothing personal"), model="qwen2.5-coder-32b")
    assert r.status_code == 200, r.text[:500]


def test_an_answer_larger_than_the_guardrail_scans_is_not_passed_on(scan_capped, keys, sim):
    sim_reply(sim, "qwen2.5-coder-32b", "word " * 300_000)
    try:
        r = chat(scan_capped, keys, "hello", model="qwen2.5-coder-32b")
    finally:
        sim_reply(sim, "qwen2.5-coder-32b", None)
    assert r.status_code == 502, r.text[:500]
    assert r.json()["error"]["code"] == "answer_too_large_to_scan"
    assert "word word" not in r.text
