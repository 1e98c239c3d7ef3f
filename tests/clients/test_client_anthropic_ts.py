"""The official TypeScript SDK, `@anthropic-ai/sdk`, on its defaults (`baseURL` and `apiKey`)
against `/v1/messages`: a message, the `messages.stream` helper and its
final message, a tool round trip (plain and streamed), and the typed error of a bad key. The
driver runs every scenario in one node process through the recording proxy, and the tests read
its report, the exchanges it made and the streams it was sent.

Unlike the Python SDK and the 0.x line, this version sends `apiKey` as `Authorization: Bearer`
(not `x-api-key`) and `anthropic-version: 2026-10-21`; the gateway takes both."""

from __future__ import annotations

import pytest

import client_harness
from messages_stream import check_stream

MODEL = "llama-3.2-3b-instruct"
answer = client_harness.harness.english_answer


@pytest.fixture(scope="module")
def run(gateway, keys, recorder):
    driver = client_harness.node_driver(gateway, keys, "anthropic-ts", "anthropic_ts_driver.mjs",
                                        "@anthropic-ai/sdk", url=recorder.url)
    return client_harness.recorded_run(driver, recorder, MODEL)


def test_every_call_was_a_message_with_the_key_as_a_bearer_token(run, keys):
    out, journal, exchanges = run
    assert {(e["method"], e["path"]) for e in exchanges} == {("POST", "/v1/messages")}, exchanges
    keys_sent = [e["headers"].get("authorization") for e in exchanges]
    assert set(keys_sent) == {f"Bearer {keys['anthropic-ts']}", "Bearer sk-sov-wrong"}, keys_sent
    assert not any("x-api-key" in e["headers"] for e in exchanges)
    assert {e["headers"]["anthropic-version"] for e in exchanges} == {"2026-10-21"}
    assert all("request-id" in e["response_headers"] for e in exchanges)
    # create, stream, tools (two plain, one streamed); the bad key never reached the journal's team.
    assert [(e["action"], e["status"]) for e in journal] == [("messages.create", "success")] * 5, journal


def test_create(run):
    r = run[0]["create"]
    assert "error" not in r, r
    assert r["id"].startswith("msg_") and r["model"] == MODEL and r["types"] == ["text"], r
    assert r["text"] == answer(MODEL, "What is the capital of France?"), r
    assert r["stop_reason"] == "end_turn" and r["usage"]["input_tokens"] > 0 and r["usage"]["output_tokens"] > 0, r
    assert r["request_id"] and r["request_id"].startswith("req-"), r


def test_the_stream_helper_and_its_final_message(run):
    r = run[0]["stream"]
    assert "error" not in r, r
    assert r["deltas"] > 1 and r["text"] == answer(MODEL, "Stream me the answer.") == r["final_text"], r
    assert r["stop_reason"] == "end_turn" and r["usage"]["output_tokens"] > 0, r


def test_a_tool_round_trip(run):
    r = run[0]["tools"]
    assert "error" not in r, r
    assert r["first_stop"] == "tool_use" and r["call"]["name"] == "get_weather" and r["call"]["input"], r
    assert r["second_stop"] == "end_turn" and "41 degrees and sunny" in r["second_text"], r
    assert r["streamed"] == {"stop": "tool_use", "name": "get_weather", "input": r["call"]["input"]}, r


def test_a_bad_key_is_the_typed_authentication_error(run):
    r = run[0]["badKey"]["raised"]
    assert r == {"authError": True, "apiError": True, "status": 401, "type": "authentication_error",
                 "request_id": r["request_id"]}, r
    assert r["request_id"].startswith("req-"), r


def test_every_stream_it_was_sent_keeps_the_rules(run):
    streams = client_harness.streamed(run[2])
    assert len(streams) == 2, [e["path"] for e in run[2]]
    told = [check_stream(events) for events in streams]
    assert [b["type"] for b in told[0]["blocks"]] == ["text"]
    assert [b["type"] for b in told[1]["blocks"]][-1] == "tool_use" and told[1]["blocks"][-1]["input"]
