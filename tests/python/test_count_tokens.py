"""`POST /v1/messages/count_tokens` (issue 45, docs/MESSAGES.md "Counting tokens") through the real
binary, the official `anthropic` SDK (`messages.count_tokens`, and the beta client's, which adds
`?beta=true`) and plain HTTP, against the session's simulated fleet.

The count must never be below the `input_tokens` the same request is then billed (an agent that
under-counts never compacts, and its next turn fails "prompt is too long"). Three models, three
ways of counting:
* `llama-3.2-3b-instruct` — `tokenize = "vllm"`: the simulator's vLLM `/tokenize` counts exactly
  what its chat bills, so the count equals the billed tokens;
* `jais-30b-chat` — `tokenize = "llama.cpp"`: `/apply-template` then `/tokenize`, exact too;
* `allam-7b-instruct` — no tokenizer: the gateway's estimate, which errs high.
"""

from __future__ import annotations

import base64
import json

import anthropic
import httpx
import pytest

import harness

VLLM, LLAMA_CPP, ESTIMATE = "llama-3.2-3b-instruct", "jais-30b-chat", "allam-7b-instruct"
REMOTE = "qwen2.5-coder-32b"  # a cloud model (eu-frankfurt-1) with a tokenizer to ask
TOKENIZE = {VLLM: "vllm", LLAMA_CPP: "llama.cpp", REMOTE: "vllm"}
NATIONAL_ID = "1712345675"  # a Saudi national id: the guardrail flags it (sensitive: local only)
REGION = harness.REGION
CARD, WEATHER = harness.CARD, harness.WEATHER_TOOL
SETTINGS = json.dumps({"default": "redact", "entities": {"credit_card": "block", "saudi_id": "flag"}})
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()
LONG_SYSTEM = ("You are a careful coding agent working in a large repository. Read the files you are "
               "given, explain what you change and why, keep changes small, run the tests, and never "
               "invent an API you have not seen. ") * 40

# A varied set of requests (keyword arguments of `messages.create` without `model`/`max_tokens`).
CASES = {
    "english": dict(messages=[{"role": "user", "content": "What is the capital of France?"}]),
    "arabic": dict(messages=[{"role": "user", "content":
                              "ما هي عاصمة المملكة العربية السعودية؟ أريد إجابة مفصلة عن تاريخها وسكانها."}]),
    "tools": dict(tools=[WEATHER], tool_choice={"type": "auto"},
                  messages=[{"role": "user", "content": "What is the weather in Riyadh?"}]),
    "tool_result_round_trip": dict(tools=[WEATHER], messages=[
        {"role": "user", "content": "What is the weather in Riyadh?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Riyadh"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": [{"type": "text", "text": "Sunny, 31 degrees, light wind from the north."}]},
            {"type": "text", "text": "And should I take an umbrella?"}]}]),
    "image": dict(messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": "What is in this picture?"}]}]),
    "long_system": dict(system=[{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}],
                        messages=[{"role": "user", "content": "Summarize your instructions in one line."}]),
    "mixed_long_arabic": dict(system="أجب باللغة العربية دائما. " * 30,
                              messages=[{"role": "user", "content": "اشرح لي كيف تعمل الشبكات العصبية " * 20}]),
}


@pytest.fixture(scope="module")
def gateway(sim, keys, tmp_path_factory):
    """Overrides conftest's: the module's one gateway, guarded and journaled, two models with a
    tokenizer to ask."""
    models = [{**m, **({"tokenize": TOKENIZE[m["id"]]} if m["id"] in TOKENIZE else {})}
              for m in harness.fleet_models(sim.url, first_byte_timeout_ms=2000, stream_idle_timeout_ms=2000)]
    config = harness.gateway_config(
        models, keys["config"],
        extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\n",
        journal={"enabled": True},
    )
    p = harness.start_gateway(config, tmp_path_factory.mktemp("count-tokens-gw"))
    yield p
    p.kill()


def count(claude, model: str, **kwargs) -> tuple[int, httpx.Headers]:
    raw = claude.messages.with_raw_response.count_tokens(model=model, **kwargs)
    return raw.parse().input_tokens, raw.headers


def billed(claude, model: str, **kwargs) -> int:
    return claude.messages.create(model=model, max_tokens=20, **kwargs).usage.input_tokens


def new_member(admin, team: dict | None = None, key: dict | None = None) -> str:
    """A member key of a new team (`team`, `key`: their extra fields); its secret."""
    t = admin.post("/v1/admin/teams", json={"name": "counted", "plan": "enterprise", **(team or {})})
    assert t.status_code == 201, t.text
    k = admin.post("/v1/admin/keys", json={"team_id": t.json()["id"], "role": "member", **(key or {})})
    assert k.status_code == 201, k.text
    return k.json()["key"]


# --- Exact where the deployment can tokenize ----------------------------------------------------


@pytest.mark.parametrize("model", [VLLM, LLAMA_CPP])
def test_the_exact_count_is_the_billed_input_tokens(claude, sim, model):
    for name, kwargs in CASES.items():
        n, headers = count(claude, model, **kwargs)
        assert headers["x-sovereign-token-count"] == "exact", name
        assert headers["x-data-residency"] == REGION[model] and headers["request-id"], name
        assert n == billed(claude, model, **kwargs), name


def test_the_vllm_tokenizer_gets_the_chat_body_the_create_call_sends(claude, sim):
    kwargs = CASES["tool_result_round_trip"]
    count(claude, VLLM, system="Be brief.", **kwargs)
    asked = [r for r in harness.sim_requests(sim) if r["path"] == "/tokenize"][-1]["body"]
    billed(claude, VLLM, system="Be brief.", **kwargs)
    sent = harness.sim_requests(sim)[-1]["body"]
    assert asked["model"] == sent["model"] and asked["add_generation_prompt"] is True
    assert asked["messages"] == sent["messages"] and asked["tools"] == sent["tools"]
    assert asked["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in asked["messages"]] == ["system", "user", "assistant", "tool", "user"]


def test_a_tokenizer_that_fails_gives_an_estimate_never_an_error(claude, sim):
    kwargs = CASES["long_system"]
    exact, _ = count(claude, VLLM, **kwargs)
    harness.sim_set(sim, VLLM, fail="error500")
    n, headers = count(claude, VLLM, **kwargs)
    assert headers["x-sovereign-token-count"] == "estimated"
    assert n >= exact


# --- Estimated, erring high, elsewhere ---------------------------------------------------------


def test_the_estimate_is_never_below_the_billed_input_tokens(claude):
    for name, kwargs in CASES.items():
        before, headers = count(claude, ESTIMATE, **kwargs)
        assert headers["x-sovereign-token-count"] == "estimated", name
        assert headers["x-data-residency"] == REGION[ESTIMATE], name
        tokens = billed(claude, ESTIMATE, **kwargs)
        assert before >= tokens, (name, before, tokens)
        # Once the ratio has learned from what the model was billed: still never below.
        after, _ = count(claude, ESTIMATE, **kwargs)
        assert after >= tokens, (name, after, tokens)


def test_the_estimate_learns_from_billed_prompts_and_comes_down_from_the_prior(claude):
    # A model whose Arabic ratio nothing above taught (the streamed test below teaches its
    # English one).
    model = "magistral-small"
    kwargs = CASES["mixed_long_arabic"]
    prior, _ = count(claude, model, **kwargs)
    tokens = billed(claude, model, **kwargs)
    learned, _ = count(claude, model, **kwargs)
    # The simulator bills words, fewer than the gateway counts: the Arabic ratio comes down from
    # the prior's 4 to its floor (1: the gateway's own count).
    assert tokens <= learned < prior / 2, (tokens, learned, prior)


# --- The protocol: beta query, plain HTTP, auth, errors ------------------------------------------


def test_the_beta_client_and_plain_http_with_x_api_key(gateway, claude, keys):
    beta = claude.beta.messages.count_tokens(model=VLLM, messages=[{"role": "user", "content": "Hi there"}],
                                             betas=["token-counting-2024-11-01"])
    assert beta.input_tokens == billed(claude, VLLM, messages=[{"role": "user", "content": "Hi there"}])
    r = httpx.post(f"{gateway.url}/v1/messages/count_tokens?beta=true", timeout=10,
                   headers={"x-api-key": keys["member"], "anthropic-version": "2023-06-01",
                            "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"},
                   json={"model": ESTIMATE, "messages": [{"role": "user", "content": "Hi there"}],
                         "context_management": {"edits": []}, "output_config": {"effort": "high"},
                         "thinking": {"type": "adaptive"}})
    assert r.status_code == 200, r.text
    assert set(r.json()) == {"input_tokens"} and r.json()["input_tokens"] > 0
    assert r.headers["x-sovereign-token-count"] == "estimated"
    assert r.headers["request-id"] == r.headers["x-audit-trace-id"]
    # Bearer works as on /v1/messages; `max_tokens` is not needed.
    r = httpx.post(f"{gateway.url}/v1/messages/count_tokens", timeout=10,
                   headers={"Authorization": f"Bearer {keys['member']}"},
                   json={"model": VLLM, "messages": [{"role": "user", "content": "Hi there"}]})
    assert r.status_code == 200 and r.json()["input_tokens"] == beta.input_tokens


def test_auto_router_counts_for_the_model_the_create_call_would_pick(claude):
    kwargs = CASES["english"]
    raw = claude.messages.with_raw_response.create(model="auto-router", max_tokens=20, **kwargs)
    picked = raw.parse().model
    n, headers = count(claude, "auto-router", **kwargs)
    assert headers["x-data-residency"] == raw.headers["x-data-residency"] == REGION[picked]
    assert n >= raw.parse().usage.input_tokens


def test_errors_come_in_the_anthropic_shape(gateway, claude):
    bad_key = anthropic.Anthropic(base_url=gateway.url, api_key="sk-sov-wrong", max_retries=0)
    cases = [
        (lambda: bad_key.messages.count_tokens(model=VLLM, messages=[{"role": "user", "content": "x"}]),
         anthropic.AuthenticationError, "authentication_error"),
        (lambda: claude.messages.count_tokens(model=VLLM, messages=[]),
         anthropic.BadRequestError, "invalid_request_error"),
        (lambda: claude.messages.count_tokens(model="no-such-model", messages=[{"role": "user", "content": "x"}]),
         anthropic.NotFoundError, "not_found_error"),
    ]
    harness.raises_anthropic_errors(cases)
    r = httpx.post(f"{gateway.url}/v1/messages/count_tokens?beta=true", timeout=10,
                   json={"model": VLLM, "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 401, r.text
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "authentication_error"


# --- Every phase that applies -------------------------------------------------------------------


def test_the_guardrail_blocks_a_card_before_any_tokenizer_sees_it(claude, sim):
    for messages, system in [
        ([{"role": "user", "content": f"my card is {CARD}"}], None),
        ([{"role": "user", "content": "hello"}], f"The customer's card is {CARD}."),
        (CASES["tool_result_round_trip"]["messages"][:2] + [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": f"card on file {CARD}"}]}], None),
    ]:
        kwargs = {"system": system} if system else {}
        with pytest.raises(anthropic.BadRequestError) as e:
            claude.messages.count_tokens(model=VLLM, messages=messages, tools=[WEATHER], **kwargs)
        assert e.value.body["error"]["type"] == "invalid_request_error", e.value.body
    assert not any(CARD in json.dumps(r["body"]) for r in harness.sim_requests(sim))


def test_the_journal_names_the_operation_and_no_usage_is_charged(claude, admin):
    raw = claude.messages.with_raw_response.count_tokens(
        model=VLLM, messages=[{"role": "user", "content": "journal my count"}],
        extra_body={"metadata": {"user_id": "bob"}})
    request_id = raw.headers["request-id"]

    e = harness.journal_entries(admin, request_id)[0]
    assert e["action"] == "messages.count_tokens" and e["status"] == "success", e
    assert e["model"] == VLLM and e["actor_id"] == "bob", e
    assert not e.get("completion_tokens"), e


def test_a_key_past_its_tokens_per_day_may_still_count_but_not_create(gateway, claude, admin):
    """Counting generates nothing: the request rate applies, the day's token quota does not."""
    capped = anthropic.Anthropic(base_url=gateway.url, api_key=new_member(admin, key={"tpd": 10}),
                                 max_retries=0, timeout=20)
    kwargs = CASES["english"]
    assert capped.messages.create(model=VLLM, max_tokens=20, **kwargs).usage.output_tokens > 0

    def refused():
        try:
            capped.messages.create(model=VLLM, max_tokens=20, **kwargs)
        except anthropic.RateLimitError:
            return True
        return False
    harness.wait_for(refused, what="the day's tokens to be spent")
    assert capped.messages.count_tokens(model=VLLM, **kwargs).input_tokens > 0


def test_residency_refuses_a_model_outside_the_keys_regions(gateway, admin):
    secret = new_member(admin, team={"allowed_regions": ["sa-riyadh-1"]})
    body = {"model": "qwen2.5-coder-32b", "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(f"{gateway.url}/v1/messages/count_tokens", json=body, timeout=10,
                   headers={"x-api-key": secret})
    assert r.status_code == 451, r.text
    assert r.json()["error"]["type"] == "permission_error", r.text
    body["model"] = VLLM  # in sa-riyadh-1
    r = httpx.post(f"{gateway.url}/v1/messages/count_tokens", json=body, timeout=10,
                   headers={"x-api-key": secret})
    assert r.status_code == 200 and r.headers["x-data-residency"] == "sa-riyadh-1", r.text


def test_a_streamed_message_teaches_the_estimate_too_and_counts_show_in_the_metrics(gateway, claude):
    model = "magistral-small"  # estimate; used by no other test here
    kwargs = CASES["long_system"]
    prior, _ = count(claude, model, **kwargs)
    with claude.messages.stream(model=model, max_tokens=20, **kwargs) as stream:
        tokens = stream.get_final_message().usage.input_tokens
    learned = harness.wait_for(lambda: (n := count(claude, model, **kwargs)[0]) < prior and n,
                               what="the ratio learned from the stream")
    assert tokens <= learned < prior, (tokens, learned, prior)
    counted = [v for k, v in harness.metrics(gateway).items()
               if k.startswith("sovereign_http_requests_total{") and 'route="messages.count_tokens"' in k]
    assert sum(counted) >= 2, counted


def test_a_flagged_prompt_is_counted_only_inside_its_boundary_never_by_a_remote_tokenizer(claude, sim):
    plain = [{"role": "user", "content": "What documents do I need for a passport?"}]
    n, headers = count(claude, REMOTE, messages=plain)
    assert headers["x-sovereign-token-count"] == "exact" and headers["x-data-residency"] == "eu-frankfurt-1"
    flagged = [{"role": "user", "content": f"My national id is {NATIONAL_ID}, what documents do I need?"}]
    with pytest.raises(anthropic.APIStatusError) as e:  # 451: local models only
        claude.messages.count_tokens(model=REMOTE, messages=flagged)
    assert e.value.status_code == 451 and e.value.body["error"]["type"] == "permission_error"
    # auto-router keeps it local, as the create call would.
    n, headers = count(claude, "auto-router", messages=flagged)
    assert headers["x-data-residency"] == "sa-riyadh-1" and n > 0
    assert not any(NATIONAL_ID in json.dumps(r["body"]) and r["path"] == "/tokenize"
                   and r["body"].get("model") == REMOTE for r in harness.sim_requests(sim))
