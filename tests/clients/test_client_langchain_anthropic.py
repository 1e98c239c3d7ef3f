"""LangChain's `ChatAnthropic` (`langchain-anthropic`) on its defaults (`base_url`, `api_key`)
against `/v1/messages`: invoke, stream, and tools (`bind_tools`, the tool's result
sent back as a `ToolMessage`), plain and streamed. One driver process, in its own venv, through
the recording proxy. The `anthropic` SDK it resolves to (2.17) sends the key as
`Authorization: Bearer` and `anthropic-version: 2026-10-21`; the gateway takes both."""

from __future__ import annotations

import pytest

import client_harness
from messages_stream import check_stream

MODEL = "allam-7b-instruct"
RESULT = "Order SOV-4417 ships on Tuesday."


@pytest.fixture(scope="module")
def run(gateway, keys, recorder):
    driver = client_harness.python_driver(gateway, keys, "langchain-anthropic", "langchain_anthropic_driver.py",
                                          url=recorder.url)
    return client_harness.recorded_run(driver, recorder, MODEL)


def test_every_call_was_a_message_with_the_key_as_a_bearer_token(run, keys):
    out, journal, exchanges = run
    assert {(e["method"], e["path"]) for e in exchanges} == {("POST", "/v1/messages")}, exchanges
    assert {e["headers"].get("authorization") for e in exchanges} == {f"Bearer {keys['langchain-anthropic']}"}
    assert {e["headers"]["anthropic-version"] for e in exchanges} == {"2026-10-21"}
    # invoke, stream, and two calls for each tool round trip.
    assert [(e["action"], e["status"]) for e in journal] == [("messages.create", "success")] * 6, journal


def test_invoke(run):
    r = run[0]["invoke"]
    assert MODEL in r["text"] and "What is the capital of France?" in r["text"], r
    assert r["model_name"] == MODEL and r["stop_reason"] == "end_turn", r
    assert r["usage"]["input_tokens"] > 0 and r["usage"]["output_tokens"] > 0, r
    assert r["usage"]["total_tokens"] == r["usage"]["input_tokens"] + r["usage"]["output_tokens"], r


def test_stream(run):
    r = run[0]["stream"]
    assert r["chunks"] > 1 and MODEL in r["text"] and "Name three rivers." in r["text"], r
    assert r["stop_reason"] == "end_turn", r
    assert r["usage"]["input_tokens"] > 0 and r["usage"]["output_tokens"] > 0, r


@pytest.mark.parametrize("name", ["tools", "stream_tools"])
def test_a_tool_round_trip(run, name):
    r = run[0][name]
    assert r["first_stop"] == "tool_use", r
    [call] = r["calls"]
    assert call["name"] == "look_up_order" and "Where is my order?" in call["args"]["text"], r
    assert RESULT in r["text"] and r["final_stop"] == "end_turn", r
    assert r["usage"]["input_tokens"] > 0, r


def test_every_stream_it_was_sent_keeps_the_rules(run):
    streams = client_harness.streamed(run[2])
    assert len(streams) == 2, [e["path"] for e in run[2]]
    told = [check_stream(events) for events in streams]
    assert told[1]["blocks"][-1]["type"] == "tool_use" and told[1]["blocks"][-1]["input"]["text"], told[1]
