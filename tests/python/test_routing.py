"""Routing through the real binary (issue 3): the built-in rules router, a Wasm component, reads
a routing document; the host computes the facts it sees (language, prompt tokens, hints)."""

from __future__ import annotations

import openai
import pytest

import harness

ROUTING = harness.RULES_ROUTING

LONG_ENGLISH = " ".join(["The quarterly report covers revenue, costs and hiring plans."] * 80)


@pytest.fixture(scope="module")
def routed(sim, keys, tmp_path_factory):
    directory = tmp_path_factory.mktemp("routed")
    (directory / "routing.yaml").write_text(ROUTING)
    config = harness.gateway_config(harness.fleet_models(sim.url), keys["config"],
                                    routing={"document": "routing.yaml"})
    p = harness.start_gateway(config, directory)
    yield p
    p.kill()


@pytest.fixture
def rclient(routed, keys):
    return openai.OpenAI(base_url=f"{routed.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)


def ask(client, text, model="auto-router", **kwargs):
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": text}], **kwargs)
    return raw.parse(), raw.headers


@pytest.mark.parametrize("text", ["ما هي عاصمة فرنسا؟", "أريد حجز موعد مع الطبيب غدا صباحا"])
def test_arabic_prompts_land_on_the_arabic_native_model(rclient, text):
    completion, headers = ask(rclient, text)
    assert completion.model == "jais-30b-chat"
    assert headers["x-route-policy"] == "test-rules"
    assert headers["x-data-residency"] == "sa-riyadh-1"


@pytest.mark.parametrize("text", ["پایتخت فرانسه کجاست؟ لطفا توضیح بدهید", "مجھے کل صبح ڈاکٹر سے ملنا ہے"])
def test_persian_and_urdu_are_not_taken_for_arabic(rclient, text):
    completion, _ = ask(rclient, text)
    assert completion.model not in ("jais-30b-chat", "allam-7b-instruct"), text


def test_french_goes_to_the_french_model(rclient):
    completion, _ = ask(rclient, "Bonjour, pouvez-vous m'aider à écrire une lettre ?")
    assert completion.model == "magistral-small"


def test_a_short_english_prompt_goes_to_the_small_model(rclient):
    completion, _ = ask(rclient, "What is the capital of France?")
    assert completion.model == "llama-3.2-3b-instruct"


def test_a_long_english_prompt_goes_elsewhere(rclient):
    completion, headers = ask(rclient, LONG_ENGLISH)
    assert completion.model == "qwen2.5-coder-32b"
    assert headers["x-route-policy"] == "test-rules"


def test_an_explicit_model_bypasses_the_rules(rclient):
    completion, headers = ask(rclient, "ما هي عاصمة فرنسا؟", model="magistral-small")
    assert completion.model == "magistral-small"
    assert headers["x-route-policy"] == "explicit-model"


def test_a_profile_chooses_when_no_rule_matches(rclient):
    # The long English prompt matches no rule; with the `cost` profile the cheapest healthy
    # English-speaking candidate wins over the document's default.
    completion, _ = ask(rclient, LONG_ENGLISH, extra_body={"routing": {"profile": "cost"}})
    assert completion.model == "llama-3.2-3b-instruct"


def test_routing_profile_wins_over_routing_preference(rclient):
    completion, _ = ask(rclient, LONG_ENGLISH,
                        extra_body={"routing": {"profile": "cost"}, "routing_preference": "performance"})
    assert completion.model == "llama-3.2-3b-instruct"


@pytest.mark.parametrize("extra", [
    {"routing": {"profile": "cheapest"}},
    {"routing_preference": "fast"},
    {"routing": {"profile": 3}},
    {"routing": "cost"},
])
def test_invalid_hints_are_a_400_naming_the_parameter(rclient, extra):
    with pytest.raises(openai.BadRequestError) as e:
        ask(rclient, "hello", extra_body=extra)
    body = e.value.body
    assert body["type"] == "invalid_request_error"
    assert body["param"].startswith("routing"), body


def test_routing_hints_do_not_reach_the_upstream(rclient, sim):
    marker = "routing-hint-marker"
    ask(rclient, "hello there", user=marker, extra_body={"routing": {"profile": "cost"},
                                                          "routing_preference": "cost"})
    sent = [r["body"] for r in harness.sim_requests(sim) if r["body"].get("user") == marker]
    assert len(sent) == 1
    assert "routing" not in sent[0] and "routing_preference" not in sent[0], sent[0]


def test_a_malformed_routing_document_stops_the_gateway_at_start_with_its_position(sim, keys, tmp_path):
    (tmp_path / "routing.yaml").write_text(ROUTING.replace("language == 'fr'", "language => 'fr'"))
    config = harness.gateway_config(harness.fleet_models(sim.url), keys["config"],
                                    routing={"document": "routing.yaml"})
    with pytest.raises(RuntimeError) as e:
        harness.start_gateway(config, tmp_path)
    assert "line 7, column 26" in str(e.value), str(e.value)
