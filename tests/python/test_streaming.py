"""Streamed chat completions: relayed as the upstream produces them, ended cleanly, re-addressed to
the gateway's request id and model, usage shown only to clients that ask for it."""

from __future__ import annotations

import json
import re
import time

import harness

INTERVAL_MS = 50


def test_chunks_arrive_before_the_upstream_has_finished(client, sim):
    harness.sim_set(sim, "magistral-small", token_interval_ms=INTERVAL_MS)
    start = time.monotonic()
    stream = client.chat.completions.create(
        model="magistral-small", stream=True, messages=[{"role": "user", "content": "un deux trois"}])
    arrivals = []  # (seconds since the request, content)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append((time.monotonic() - start, chunk.choices[0].delta.content))
    total = time.monotonic() - start

    tokens = len(arrivals)
    assert tokens >= 10, arrivals
    assert "".join(c for _, c in arrivals).startswith("Bonjour")
    # The upstream needs at least one interval per token, so the whole stream cannot be faster...
    assert total >= tokens * INTERVAL_MS / 1000, (total, tokens)
    # ...and the first token must reach the client long before the upstream is done with the rest.
    first, last = arrivals[0][0], arrivals[-1][0]
    assert first < total / 3, (first, total)
    assert last - first >= (tokens - 1) * INTERVAL_MS / 1000 * 0.8, (first, last)


def test_stream_is_readdressed_and_ends_cleanly(client):
    raw = client.chat.completions.with_raw_response.create(
        model="auto-router", stream=True, messages=[{"role": "user", "content": "marhaba"}])
    assert raw.headers["content-type"].startswith("text/event-stream")
    trace = raw.headers["x-audit-trace-id"]
    assert raw.headers["x-data-residency"] == "sa-riyadh-1"
    assert raw.headers["x-route-policy"] == "default"
    chunks = list(raw.parse())
    assert chunks, "no chunks"
    assert {c.id for c in chunks} == {trace}
    assert {c.model for c in chunks} == {"jais-30b-chat"}
    assert all(c.usage is None for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "jais-30b-chat" in text and "marhaba" in text


def test_streamed_text_equals_the_non_streamed_answer(client):
    messages = [{"role": "user", "content": "same question both ways"}]
    whole = client.chat.completions.create(model="qwen2.5-coder-32b", messages=messages)
    streamed = "".join(c.choices[0].delta.content or ""
                       for c in client.chat.completions.create(model="qwen2.5-coder-32b",
                                                               messages=messages, stream=True)
                       if c.choices)
    assert streamed == whole.choices[0].message.content


def test_usage_chunk_only_when_the_client_asks(client):
    messages = [{"role": "user", "content": "count my tokens please"}]
    with_usage = list(client.chat.completions.create(
        model="allam-7b-instruct", stream=True, messages=messages, stream_options={"include_usage": True}))
    usage_chunks = [c for c in with_usage if c.usage is not None]
    assert len(usage_chunks) == 1
    usage = usage_chunks[0].usage
    assert usage_chunks[0] is with_usage[-1] and usage_chunks[0].choices == []
    content_chunks = [c for c in with_usage if c.choices and c.choices[0].delta.content]
    assert usage.completion_tokens == len(content_chunks)
    assert usage.prompt_tokens == 5  # four words + one per message, as the simulator counts
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert {c.id for c in with_usage} == {with_usage[0].id}

    without = list(client.chat.completions.create(model="allam-7b-instruct", stream=True, messages=messages))
    assert without and all(c.usage is None for c in without)
    assert all(c.choices for c in without), "a choice-less (usage) chunk leaked to the client"


def test_raw_event_stream_framing(http):
    """On the wire: only `data:` events, each a JSON chunk, then exactly one `[DONE]` at the end."""
    with http.stream("POST", "/v1/chat/completions", json={
            "model": "magistral-small", "stream": True, "messages": [{"role": "user", "content": "x"}]}) as r:
        assert r.status_code == 200
        assert r.headers["cache-control"] == "no-cache"
        body = r.read().decode()
    events = [e for e in body.split("\n\n") if e.strip()]
    assert events[-1] == "data: [DONE]"
    assert body.endswith("data: [DONE]\n\n")
    for e in events[:-1]:
        assert re.fullmatch(r"data: \{.*\}", e, re.S), e
        chunk = json.loads(e.removeprefix("data: "))
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["id"] == r.headers["x-audit-trace-id"]
        assert chunk["model"] == "magistral-small"
        assert "usage" not in chunk or chunk["usage"] is None
