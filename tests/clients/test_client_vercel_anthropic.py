"""The Vercel AI SDK's Anthropic provider (`ai` 6 + `@ai-sdk/anthropic` 3) on its defaults:
`createAnthropic({ baseURL, apiKey })`, `anthropic(modelId)`, which posts to
`{baseURL}/messages` with `x-api-key`: generateText, streamText with usage, a tool loop plain and
streamed. One node process through the recording proxy; the tests read its report, the
exchanges and the streams it was sent."""

from __future__ import annotations

import pytest

import client_harness
from messages_stream import check_stream

MODEL = "jais-30b-chat"
assert_usage = client_harness.assert_ai_sdk_usage


@pytest.fixture(scope="module")
def run(gateway, keys, recorder):
    driver = client_harness.node_driver(gateway, keys, "vercel-anthropic", "vercel_anthropic_driver.mjs",
                                        "@ai-sdk/anthropic", url=recorder.url)
    return client_harness.recorded_run(driver, recorder, MODEL)


def test_the_provider_calls_messages_with_x_api_key(run, keys):
    out, journal, exchanges = run
    assert out["provider"] == "anthropic.messages", out
    assert {(e["method"], e["path"]) for e in exchanges} == {("POST", "/v1/messages")}, exchanges
    assert all(e["headers"]["x-api-key"] == keys["vercel-anthropic"] for e in exchanges)
    # generate, stream, two steps of each tool loop.
    assert [(e["action"], e["status"]) for e in journal] == [("messages.create", "success")] * 6, journal


def test_generate_text(run):
    r = run[0]["generate"]
    assert "error" not in r, r
    assert MODEL in r["text"] and "What is the capital of France?" in r["text"], r
    assert r["finishReason"] == "stop" and r["modelId"] == MODEL, r
    assert_usage(r["usage"])


def test_stream_text_with_usage(run):
    r = run[0]["stream"]
    assert "error" not in r, r
    assert r["parts"] > 1 and "Name three rivers." in r["text"] and r["finishReason"] == "stop", r
    assert_usage(r["usage"])


def test_a_tool_loop(run):
    client_harness.assert_ai_sdk_tool_loop(run[0]["tools"])


def test_a_streamed_tool_loop(run):
    client_harness.assert_ai_sdk_tool_loop(run[0]["streamTools"])


def test_every_stream_it_was_sent_keeps_the_rules(run):
    streams = client_harness.streamed(run[2])
    # streamText, and both steps of the streamed tool loop.
    assert len(streams) == 3, [e["path"] for e in run[2]]
    told = [check_stream(events) for events in streams]
    assert told[1]["blocks"][-1]["type"] == "tool_use" and told[1]["blocks"][-1]["input"]["text"], told[1]
