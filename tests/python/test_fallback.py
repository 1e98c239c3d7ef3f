"""Issue 7, fallback and passive health through the real binary: when the routed model fails
before answering (5xx, silence past its first-byte timeout, a refused connection, 429) its
fallback serves, and the answer's `model` and `X-Data-Residency` name the fallback; other 4xx
are passed on; a model that keeps failing is taken out of rotation (its breaker opens, it is
not called) and comes back after a successful half-open probe; fallbacks never leave the
team's allowed regions (451 when none remains)."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

import harness

HI = [{"role": "user", "content": "hi"}]
OPEN_MS = 1500
THRESHOLD = 3
HEALTH = harness.UNLIMITED + f"\n[health]\nfailure_threshold = {THRESHOLD}\nopen_ms = {OPEN_MS}\n"

# Primary → fallbacks. Each fallback runs in another region than its primary, so the
# `X-Data-Residency` header shows which one served.
FALLBACKS = {
    "qwen2.5-coder-32b": ["magistral-small"],  # eu-frankfurt-1 → eu-paris-1
    "jais-30b-chat": ["magistral-small", "allam-7b-instruct"],  # sa → eu (skipped for sa-only teams) → sa
    "llama-3.2-3b-instruct": ["qwen2.5-coder-32b"],  # sa → eu only
}


def fleet(sim, **per_model) -> list[dict]:
    models = []
    for m in harness.fleet_models(sim.url, first_byte_timeout_ms=2000):
        if m["id"] in FALLBACKS:
            m["fallbacks"] = FALLBACKS[m["id"]]
        m.update(per_model.get(m["id"], {}))
        models.append(m)
    return models


@pytest.fixture
def gw(sim, gateway_factory):
    return gateway_factory(fleet(sim, **{"qwen2.5-coder-32b": {"first_byte_timeout_ms": 500}}), extra=HEALTH)


def client_for(gw, key) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gw.url}/v1", api_key=key, max_retries=0, timeout=20)


def calls(sim, fn):
    """Runs `fn` and returns its result with the models the simulator was asked for meanwhile."""
    before = harness.sim_stats(sim)["requests"]
    result = fn()
    n = harness.sim_stats(sim)["requests"] - before
    models = [r["body"]["model"] for r in harness.sim_requests(sim)[-n:]] if n else []
    return result, models


def ask(client, model, **kw):
    return client.chat.completions.with_raw_response.create(model=model, messages=HI, **kw)


def test_a_5xx_primary_is_served_by_its_fallback(gw, sim, keys):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error500")
    client = client_for(gw, keys["member"])
    before = harness.metrics(gw)["sovereign_fallbacks_total"]
    raw, models = calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
    assert models == ["qwen2.5-coder-32b", "magistral-small"]
    answer = raw.parse()
    assert answer.model == "magistral-small"
    assert raw.headers["x-data-residency"] == "eu-paris-1"
    assert "magistral-small" in answer.choices[0].message.content
    assert harness.metrics(gw)["sovereign_fallbacks_total"] == before + 1
    # The journal and the spend name the model that served, at its prices.
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=20) as a:
        logs = a.post("/v1/activity/logs", json={"request_id": answer.id})
        assert logs.status_code == 200, logs.text
        [entry] = logs.json()["data"]
        assert (entry["model"], entry["residency_boundary"]) == ("magistral-small", "eu-paris-1")
        rows = a.get("/v1/admin/usage").json()["data"]
        assert {r["model"] for r in rows} == {"magistral-small"}, rows
        served = next(m for m in harness.FLEET if m["id"] == "magistral-small")
        row = rows[0]
        expected = (row["tokens_in"] * served["input_cost_per_mtok"]
                    + row["tokens_out"] * served["output_cost_per_mtok"]) / 1e6
        assert row["spend"] == pytest.approx(expected, abs=1e-6)


def test_a_5xx_primary_falls_back_for_streams_too(gw, sim, keys):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error500")
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['member']}"}, timeout=20) as c:
        r = c.post("/v1/chat/completions", json={"model": "qwen2.5-coder-32b", "messages": HI, "stream": True})
    assert r.status_code == 200, r.text
    assert r.headers["x-data-residency"] == "eu-paris-1"
    assert r.text.endswith("data: [DONE]\n\n")
    assert '"model":"magistral-small"' in r.text and '"model":"qwen2.5-coder-32b"' not in r.text


def test_a_hanging_primary_falls_back_after_its_first_byte_timeout(gw, sim, keys):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="hang")
    client = client_for(gw, keys["member"])
    start = time.monotonic()
    raw, models = calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
    elapsed = time.monotonic() - start
    assert models == ["qwen2.5-coder-32b", "magistral-small"]
    assert raw.parse().model == "magistral-small"
    assert 0.45 <= elapsed < 3, elapsed


def test_a_refused_connection_falls_back(sim, gateway_factory, keys):
    port = harness.closed_port()
    gw = gateway_factory(fleet(sim, **{"qwen2.5-coder-32b": {"base_url": f"http://127.0.0.1:{port}/v1"}}),
                         extra=HEALTH)
    client = client_for(gw, keys["member"])
    raw, models = calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
    assert models == ["magistral-small"], "the primary never reached the simulator"
    assert raw.parse().model == "magistral-small"
    assert raw.headers["x-data-residency"] == "eu-paris-1"
    # Streams too: the refusal comes before any byte reached the client.
    stream = client.chat.completions.create(model="qwen2.5-coder-32b", messages=HI, stream=True)
    assert {c.model for c in stream} == {"magistral-small"}


def test_a_429_primary_falls_back(gw, sim, keys):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error429")
    raw, models = calls(sim, lambda: ask(client_for(gw, keys["member"]), "qwen2.5-coder-32b"))
    assert models == ["qwen2.5-coder-32b", "magistral-small"]
    assert raw.parse().model == "magistral-small"


def test_a_400_from_the_primary_is_passed_on_not_retried(gw, sim, keys):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error400")
    client = client_for(gw, keys["member"])
    with pytest.raises(openai.BadRequestError) as e:
        calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
    assert "simulated bad request" in e.value.body["message"]
    assert e.value.response.headers["x-data-residency"] == "eu-frankfurt-1"
    last = harness.sim_requests(sim)[-1]["body"]["model"]
    assert last == "qwen2.5-coder-32b", "the fallback was not called"


def test_when_every_fallback_fails_the_last_error_is_returned(gw, sim, keys):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error500")
    harness.sim_set(sim, "magistral-small", fail="error500")
    with pytest.raises(openai.InternalServerError) as e:
        ask(client_for(gw, keys["member"]), "qwen2.5-coder-32b")
    assert e.value.status_code == 502
    assert "magistral-small" in e.value.body["message"]
    assert e.value.response.headers["x-data-residency"] == "eu-paris-1"


def test_the_breaker_opens_after_repeated_failures_and_closes_after_recovery(gw, sim, keys):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error500")
    client = client_for(gw, keys["member"])
    for _ in range(THRESHOLD):
        raw, models = calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
        assert models == ["qwen2.5-coder-32b", "magistral-small"]
    m = harness.metrics(gw)
    assert m["sovereign_model_breakers_open"] == 1
    assert m["sovereign_model_breaker_trips_total"] == 1
    # Open: the primary is not called at all; its fallback serves straight away.
    raw, models = calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
    assert models == ["magistral-small"]
    assert raw.parse().model == "magistral-small"
    # The model recovers; after `open_ms` one probe goes through, succeeds and closes the breaker.
    harness.sim_set(sim, "qwen2.5-coder-32b")
    start = time.monotonic()

    def served_by_primary():
        raw, models = calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
        return models[:1] == ["qwen2.5-coder-32b"] and raw.parse().model == "qwen2.5-coder-32b"

    harness.wait_for(served_by_primary, timeout=OPEN_MS / 1000 + 10, interval=0.1, what="the half-open probe")
    assert time.monotonic() - start >= OPEN_MS / 1000 * 0.5
    assert harness.metrics(gw)["sovereign_model_breakers_open"] == 0
    raw, models = calls(sim, lambda: ask(client, "qwen2.5-coder-32b"))
    assert models == ["qwen2.5-coder-32b"]


def test_every_candidate_out_of_rotation_is_503_with_retry_after(gw, sim, keys):
    # allam-7b-instruct has no fallbacks: each failure is a 502 until its breaker opens.
    harness.sim_set(sim, "allam-7b-instruct", fail="error500")
    client = client_for(gw, keys["member"])
    for _ in range(THRESHOLD):
        with pytest.raises(openai.InternalServerError) as e:
            ask(client, "allam-7b-instruct")
        assert e.value.status_code == 502
    with pytest.raises(openai.APIStatusError) as e:
        ask(client, "allam-7b-instruct")
    assert e.value.status_code == 503
    assert e.value.code == "model_unavailable"
    assert set(e.value.body) == {"message", "type", "param", "code"}
    assert "allam-7b-instruct" in e.value.body["message"]
    assert 1 <= int(e.value.response.headers["retry-after"]) <= OPEN_MS // 1000 + 1
    status, models = calls(sim, lambda: status_of(client, "allam-7b-instruct"))
    assert status == 503
    assert models == [], "an open breaker keeps the model from being called"


def status_of(client, model) -> int:
    try:
        ask(client, model)
    except openai.APIStatusError as e:
        return e.status_code
    return 200


def member_of(gw, keys, **team) -> str:
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=30) as a:
        t = a.post("/v1/admin/teams", json={"name": "r", "plan": "enterprise", **team})
        assert t.status_code == 201, t.text
        k = a.post("/v1/admin/keys", json={"team_id": t.json()["id"], "role": "member"})
        assert k.status_code == 201, k.text
        return k.json()["key"]


def test_fallbacks_outside_the_allowed_regions_are_skipped(gw, sim, keys):
    secret = member_of(gw, keys, allowed_regions=["sa-riyadh-1"])
    client = client_for(gw, secret)
    # jais → magistral-small (Paris: not for this team) → allam-7b-instruct (Riyadh).
    harness.sim_set(sim, "jais-30b-chat", fail="error500")
    raw, models = calls(sim, lambda: ask(client, "jais-30b-chat"))
    assert models == ["jais-30b-chat", "allam-7b-instruct"]
    assert raw.parse().model == "allam-7b-instruct"
    assert raw.headers["x-data-residency"] == "sa-riyadh-1"
    # The same request from a team without the constraint goes to Paris.
    raw, models = calls(sim, lambda: ask(client_for(gw, keys["member"]), "jais-30b-chat"))
    assert models == ["jais-30b-chat", "magistral-small"]
    # llama's only fallback is in Frankfurt: none remains for this team → 451.
    harness.sim_set(sim, "llama-3.2-3b-instruct", fail="error500")
    with pytest.raises(openai.APIStatusError) as e:
        calls(sim, lambda: ask(client, "llama-3.2-3b-instruct"))
    assert e.value.status_code == 451
    assert e.value.type == "sovereignty_error" and e.value.code == "region_not_allowed"
    message = e.value.body["message"]
    assert "llama-3.2-3b-instruct" in message and "500" in message, message
    assert "qwen2.5-coder-32b" in message and "eu-frankfurt-1" in message, message
    assert harness.sim_requests(sim)[-1]["body"]["model"] == "llama-3.2-3b-instruct", "Frankfurt never called"
