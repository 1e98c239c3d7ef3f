"""Upstream failures as a client sees them: 5xx → 502, silence → 504 within the first-byte timeout,
429 passed on, a stream cut mid-way → an error event (not a hang), nobody listening → 502."""

from __future__ import annotations

import socket
import time

import openai
import pytest

import harness

HI = [{"role": "user", "content": "hi"}]
FIRST_BYTE_TIMEOUT_S = 2.0  # conftest: first_byte_timeout_ms = 2000


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_upstream_500_is_502(client, sim, gateway, stream):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error500")
    before = harness.metrics(gateway)["sovereign_upstream_errors_total"]
    with pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="qwen2.5-coder-32b", messages=HI, stream=stream)
    err = e.value
    assert err.status_code == 502
    assert err.code == "upstream_unavailable"
    assert err.type == "upstream_error"
    assert "qwen2.5-coder-32b" in err.body["message"] and "500" in err.body["message"]
    assert "simulated internal error" in err.body["message"]
    assert err.response.headers["x-data-residency"] == "eu-frankfurt-1"
    assert harness.metrics(gateway)["sovereign_upstream_errors_total"] == before + 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_upstream_hang_is_504_after_first_byte_timeout(client, sim, stream):
    harness.sim_set(sim, "jais-30b-chat", fail="hang")
    start = time.monotonic()
    with pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="auto-router", messages=HI, stream=stream)
    elapsed = time.monotonic() - start
    assert e.value.status_code == 504
    assert e.value.code == "upstream_timeout"
    assert "jais-30b-chat" in e.value.body["message"] and "did not answer" in e.value.body["message"]
    assert FIRST_BYTE_TIMEOUT_S * 0.9 <= elapsed < FIRST_BYTE_TIMEOUT_S + 2.0, elapsed


def test_upstream_hang_on_embeddings_is_504(client, sim):
    harness.sim_set(sim, "multilingual-e5-small", fail="hang")
    start = time.monotonic()
    with pytest.raises(openai.InternalServerError) as e:
        client.embeddings.create(model="multilingual-e5-small", input="x")
    assert e.value.status_code == 504
    assert time.monotonic() - start < FIRST_BYTE_TIMEOUT_S + 2.0


def test_upstream_429_is_passed_on(client, sim):
    harness.sim_set(sim, "magistral-small", fail="error429")
    with pytest.raises(openai.RateLimitError) as e:
        client.chat.completions.create(model="magistral-small", messages=HI)
    assert e.value.status_code == 429
    assert "simulated overload" in e.value.body["message"]
    assert set(e.value.body) == {"message", "type", "param", "code"}


def test_upstream_500_on_embeddings_is_502(client, sim):
    harness.sim_set(sim, "multilingual-e5-small", fail="error500")
    with pytest.raises(openai.InternalServerError) as e:
        client.embeddings.create(model="multilingual-e5-small", input="x")
    assert e.value.status_code == 502


def test_drop_mid_stream_ends_with_an_error_event(client, sim, gateway):
    harness.sim_set(sim, "allam-7b-instruct", fail="drop_mid_stream", token_interval_ms=10)
    failed_before = harness.metrics(gateway)["sovereign_streams_upstream_failed_total"]
    stream = client.chat.completions.create(
        model="allam-7b-instruct", stream=True, messages=[{"role": "user", "content": "tell me a long story"}])
    received = []
    start = time.monotonic()
    with pytest.raises(openai.APIError) as e:
        for chunk in stream:
            received.append(chunk)
    assert time.monotonic() - start < 5, "the cut stream was not ended promptly"
    # Not a status error (the 200 headers were sent), not a transport error: an error event.
    assert not isinstance(e.value, (openai.APIStatusError, openai.APIConnectionError))
    assert "allam-7b-instruct" in e.value.message
    assert set(e.value.body) == {"message", "type", "param", "code"}
    assert e.value.body["code"] == "upstream_unavailable"
    assert received, "the part before the cut should have been relayed"
    assert all(c.choices[0].finish_reason is None for c in received if c.choices)
    harness.wait_for(lambda: harness.metrics(gateway)["sovereign_streams_upstream_failed_total"] == failed_before + 1,
                     timeout=5, what="the failed stream to be counted")
    assert harness.metrics(gateway)["sovereign_streams_active"] == 0


def test_drop_mid_stream_on_the_wire_has_no_done(http, sim):
    # With a token interval the first half really is sent before the cut (with none, the
    # simulator's connection can die before its headers are flushed, which is a plain 502).
    harness.sim_set(sim, "allam-7b-instruct", fail="drop_mid_stream", token_interval_ms=10)
    r = http.post("/v1/chat/completions", json={
        "model": "allam-7b-instruct", "stream": True, "messages": [{"role": "user", "content": "story"}]})
    assert r.status_code == 200
    events = [e for e in r.text.split("\n\n") if e.strip()]
    assert "[DONE]" not in r.text
    assert events[-1].startswith('data: {"error":'), events[-1]


def test_drop_mid_answer_non_streamed_is_502(client, sim):
    harness.sim_set(sim, "allam-7b-instruct", fail="drop_mid_stream")
    with pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="allam-7b-instruct", messages=HI)
    assert e.value.status_code == 502


def test_closed_upstream_port_is_502_with_a_clear_message(gateway_factory, keys):
    port = harness.closed_port()
    models = [dict(harness.FLEET[0], base_url=f"http://127.0.0.1:{port}/v1", connect_timeout_ms=1000)]
    gw = gateway_factory(models)
    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)
    start = time.monotonic()
    with pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="auto-router", messages=HI)
    assert time.monotonic() - start < 3
    err = e.value
    assert err.status_code == 502
    assert err.code == "upstream_unavailable"
    message = err.body["message"]
    assert "Could not connect" in message and "jais-30b-chat" in message, message
    assert "refused" in message.lower(), message
    # The same for a stream: the failure comes before any 200.
    with pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="jais-30b-chat", messages=HI, stream=True)
    assert e.value.status_code == 502


def test_a_tls_handshake_that_never_ends_is_504_within_the_connect_timeout(gateway_factory, keys):
    """`connect_timeout_ms` bounds the TCP connection and the TLS handshake together: an
    `https` upstream that accepts and then says nothing times out at the connect timeout (1 s
    here), not at the first-byte timeout (the default 60 s for this model)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepted by the kernel, never answered
        port = silent.getsockname()[1]
        models = [dict(harness.FLEET[0], base_url=f"https://127.0.0.1:{port}/v1",
                       connect_timeout_ms=1000)]
        gw = gateway_factory(models)
        client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0,
                               timeout=20)
        start = time.monotonic()
        with pytest.raises(openai.InternalServerError) as e:
            client.chat.completions.create(model="jais-30b-chat", messages=HI)
        elapsed = time.monotonic() - start
    assert e.value.status_code == 504, e.value.body
    assert e.value.code == "upstream_timeout"
    assert "could not connect within the connect timeout" in e.value.body["message"], e.value.body
    assert 0.9 <= elapsed < FIRST_BYTE_TIMEOUT_S, elapsed


def test_the_models_own_key_goes_upstream_never_the_clients(sim, keys, tmp_path):
    """`api_key_env`: the upstream sees `Bearer <that variable>`, not the client's gateway key."""
    models = [dict(harness.FLEET[0], base_url=f"{sim.url}/v1", api_key_env="TEST_UPSTREAM_KEY")]
    gw = harness.start_gateway(harness.gateway_config(models, keys["config"]), tmp_path,
                               env={"TEST_UPSTREAM_KEY": "sk-upstream-secret"})
    try:
        client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0)
        client.chat.completions.create(model="jais-30b-chat", messages=HI)
        sent = harness.sim_requests(sim)[-1]
        assert sent["path"].endswith("/chat/completions"), sent
        assert sent["authorization"] == "Bearer sk-upstream-secret", sent
    finally:
        gw.kill()
