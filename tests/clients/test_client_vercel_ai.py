"""The Vercel AI SDK (`ai` + `@ai-sdk/openai`) on its default provider: `createOpenAI({ baseURL,
apiKey })` and `openai(modelId)`, which in these versions is the Responses API
(`POST /v1/responses`). The driver runs every scenario in one node process (node starts in well
under a second; the scenarios are independent) and the tests below read its report."""

from __future__ import annotations

import json

import pytest

import client_harness

MODEL = "jais-30b-chat"
assert_usage = client_harness.assert_ai_sdk_usage


@pytest.fixture(scope="module")
def run(gateway, keys, sim):
    driver = client_harness.node_driver(gateway, keys)
    with client_harness.Upstream(sim) as upstream:
        out = driver(MODEL)
    return out, driver.journal(), upstream.requests


def test_the_default_provider_calls_the_responses_api(run):
    out, journal, upstream = run
    assert out["provider"] == "openai.responses"
    # Every language-model call was `POST /v1/responses` (the embedding model has its own endpoint).
    assert {e["action"] for e in journal} == {"responses.create", "embeddings"}, journal
    assert {u["path"] for u in upstream} == {"/v1/chat/completions", "/v1/embeddings"}, upstream


def test_generate_text(run):
    r = run[0]["generate"]
    assert "error" not in r, r
    assert MODEL in r["text"] and "What is the capital of France?" in r["text"], r
    assert r["finishReason"] == "stop" and r["modelId"] == MODEL, r
    assert_usage(r["usage"])


def test_stream_text(run):
    r = run[0]["stream"]
    assert "error" not in r, r
    assert r["parts"] > 1 and "Name three rivers." in r["text"], r
    assert r["finishReason"] == "stop", r
    assert_usage(r["usage"])


def test_a_tool_loop(run):
    client_harness.assert_ai_sdk_tool_loop(run[0]["tools"])


def test_a_streamed_tool_loop(run):
    client_harness.assert_ai_sdk_tool_loop(run[0]["streamTools"])


def test_embed_many(run):
    r = run[0]["embed"]
    assert "error" not in r, r
    assert r["count"] == 2 and r["dims"] == [384, 384] and r["usage"]["tokens"] > 0, r


def test_structured_output(run):
    r = run[0]["structured"]
    assert "error" not in r, r
    assert isinstance(r["output"]["policy"], str) and isinstance(r["output"]["years"], int), r


def test_a_refused_request_is_an_api_call_error_with_the_gateway_error(run):
    out, journal, upstream = run
    r = out["guardrail"]["error"]
    assert r["name"] == "AI_APICallError" and r["statusCode"] == 400, r
    body = json.loads(r["responseBody"])["error"]
    assert body["type"] == "guardrail_violation" and body["code"] == "pii_detected", body
    assert "blocked" in [e["status"] for e in journal]
    assert not any("4111" in json.dumps(u) for u in upstream), "a refused prompt reached a model"


def test_a_second_turn_with_store_false(run):
    r = run[0]["multiturnStoreFalse"]
    assert "error" not in r, r
    assert r["input"] == ["user", "assistant", "user"] and "And of Spain?" in r["text"], r


def test_a_second_turn_on_the_defaults(run):
    r = run[0]["multiturn"]
    assert "error" not in r, r
    assert "And of Spain?" in r["text"], r
