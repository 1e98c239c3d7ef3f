"""Webhooks through the real binary: subscriptions (admin API), signed deliveries checked by a
receiver inside the test, retries with backoff, per-subscription order, dead letters and
re-drive, nothing lost across a restart (graceful or kill -9), and the SSRF guard."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

import harness

HI = [{"role": "user", "content": "hi"}]

WEBHOOKS = dict(allow_loopback=True, retry_initial_ms=30, retry_max_ms=120, max_age_ms=60000,
                timeout_ms=2000, request_completed_after_ms=0)


def webhooks_config(sim, keys, **webhooks) -> str:
    extra = "\n[webhooks]\n" + "".join(
        f"{k} = {harness.toml_value(v)}\n" for k, v in {**WEBHOOKS, **webhooks}.items())
    return harness.gateway_config(harness.fleet_models(sim.url), keys["config"],
                                  extra=harness.UNLIMITED + extra)


@pytest.fixture
def receiver():
    r = harness.Receiver()
    yield r
    r.close()


@pytest.fixture
def hooked(sim, keys, tmp_path):
    """A gateway that may deliver to loopback, retries fast, reports every request."""
    p = harness.start_gateway(webhooks_config(sim, keys), tmp_path)
    yield p
    p.kill()


def admin(gateway, keys) -> httpx.Client:
    return httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=20)


def subscribe(gateway, keys, receiver, events=("request.completed",), **extra) -> dict:
    with admin(gateway, keys) as a:
        r = a.post("/v1/admin/webhooks", json={"url": receiver.url, "events": list(events), **extra})
    assert r.status_code == 201, r.text
    sub = r.json()
    receiver.secret = sub["secret"]
    return sub


def deliveries(gateway, keys, sub_id, **params) -> list[dict]:
    with admin(gateway, keys) as a:
        r = a.get(f"/v1/admin/webhooks/{sub_id}/deliveries", params=params)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def chat(gateway, keys, n=1) -> list[str]:
    client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=keys["member"], max_retries=0)
    ids = []
    for _ in range(n):
        raw = client.chat.completions.with_raw_response.create(model="jais-30b-chat", messages=HI)
        ids.append(raw.headers["x-audit-trace-id"])
    return ids


def test_a_signed_delivery_is_retried_until_accepted_exactly_once(hooked, keys, receiver):
    sub = subscribe(hooked, keys, receiver)
    receiver.plan = [500, 500]
    [request_id] = chat(hooked, keys)

    harness.wait_for(lambda: receiver.accepted(), what="an accepted delivery")
    [d] = harness.wait_for(lambda: [d for d in deliveries(hooked, keys, sub["id"]) if d["state"] == "delivered"],
                           what="the delivery recorded as delivered")
    assert [r["status"] for r in receiver.received] == [500, 500, 200]
    assert receiver.bad_signatures == 0 and all(r["signature_ok"] for r in receiver.received)
    # One event: the same webhook-id on every attempt (receivers de-duplicate by it).
    assert len({r["headers"]["webhook-id"] for r in receiver.received}) == 1
    assert receiver.received[0]["headers"]["webhook-id"] == d["event_id"]
    assert d["attempts"] == 3 and [a["status"] for a in d["attempt_log"]] == [500, 500, 200]
    [accepted] = receiver.accepted()
    body = accepted["json"]
    assert set(body) == {"event", "timestamp", "request_id", "details", "metadata"}
    assert body["event"] == "request.completed" and body["request_id"] == request_id
    assert body["details"]["model"] == "jais-30b-chat" and body["details"]["status"] == 200
    assert body["details"]["tokens"]["total"] > 0 and body["details"]["latency_ms"] >= 0
    assert body["metadata"] == {"team_id": "t1", "user_id": body["metadata"]["user_id"]}
    assert accepted["headers"]["content-type"] == "application/json"
    m = harness.metrics(hooked)
    assert m["sovereign_webhook_delivered_total"] == 1 and m["sovereign_webhook_failed_attempts_total"] == 2


def test_events_arrive_in_order_per_subscription_despite_failures(hooked, keys, receiver):
    subscribe(hooked, keys, receiver)
    # Failures sprinkled through: each one holds back everything after it until it succeeds.
    receiver.plan = [200, 500, 200, 503, 500, 200, 200, 429]
    sent = chat(hooked, keys, n=12)
    harness.wait_for(lambda: len(receiver.accepted()) == 12, what="12 accepted deliveries")
    assert [a["json"]["request_id"] for a in receiver.accepted()] == sent
    assert receiver.bad_signatures == 0


def test_pending_events_survive_a_graceful_stop_and_a_kill(sim, keys, tmp_path, receiver):
    config = webhooks_config(sim, keys)
    gw = harness.start_gateway(config, tmp_path)
    sub = subscribe(gw, keys, receiver)
    receiver.default_status = 503  # the receiver is down: everything stays pending
    sent = chat(gw, keys, n=3)
    harness.wait_for(lambda: len(deliveries(gw, keys, sub["id"], state="pending")) == 3, what="3 pending")
    assert gw.stop() == 0  # SIGTERM: graceful

    gw = harness.start_gateway(config, tmp_path)
    sent += chat(gw, keys, n=2)
    # Pending visible through the API means persisted: a kill -9 now loses nothing.
    harness.wait_for(lambda: len(deliveries(gw, keys, sub["id"], state="pending")) == 5, what="5 pending")
    gw.proc.send_signal(signal.SIGKILL)
    gw.proc.wait(timeout=10)

    receiver.default_status = 200
    gw = harness.start_gateway(config, tmp_path)
    try:
        harness.wait_for(lambda: len({a["json"]["request_id"] for a in receiver.accepted()}) == 5,
                         what="all 5 events delivered after the restarts")
        assert [a["json"]["request_id"] for a in receiver.accepted()] == sent
        assert receiver.bad_signatures == 0
    finally:
        gw.kill()


def test_too_old_deliveries_are_dead_lettered_and_can_be_redriven(sim, keys, tmp_path, receiver):
    gw = harness.start_gateway(webhooks_config(sim, keys, max_age_ms=300), tmp_path)
    try:
        sub = subscribe(gw, keys, receiver)
        receiver.default_status = 500
        [request_id] = chat(gw, keys)
        [dead] = harness.wait_for(lambda: deliveries(gw, keys, sub["id"], state="dead"), what="a dead letter")
        assert dead["attempts"] >= 2 and dead["last_status"] == 500
        assert dead["payload"]["request_id"] == request_id
        assert receiver.accepted() == []

        receiver.default_status = 200
        with admin(gw, keys) as a:
            r = a.post(f"/v1/admin/webhooks/{sub['id']}/deliveries/redrive", json={})
        assert r.status_code == 200 and r.json()["redriven"] == 1
        harness.wait_for(lambda: receiver.accepted(), what="the re-driven delivery")
        assert receiver.accepted()[0]["json"]["request_id"] == request_id
        assert deliveries(gw, keys, sub["id"], state="dead") == []
    finally:
        gw.kill()


def test_the_admin_api(hooked, keys, receiver, http):
    sub = subscribe(hooked, keys, receiver, events=["*"], description="ops channel")
    assert sub["secret"].startswith("whsec_") and sub["id"].startswith("wh_")
    with admin(hooked, keys) as a:
        got = a.get(f"/v1/admin/webhooks/{sub['id']}").json()
        assert "secret" not in got and got["events"] == ["*"] and got["url"] == receiver.url
        assert sub["id"] in [w["id"] for w in a.get("/v1/admin/webhooks").json()["data"]]

        # The test ping goes out signed.
        r = a.post(f"/v1/admin/webhooks/{sub['id']}/test")
        assert r.status_code == 202
        ping = harness.wait_for(lambda: [x for x in receiver.accepted() if x["json"]["event"] == "webhook.test"],
                                what="the test ping")[0]
        assert ping["headers"]["webhook-id"] == r.json()["event_id"] and ping["signature_ok"]

        for body, param in [
            ({"url": receiver.url, "events": ["nope"]}, "events"),
            ({"url": receiver.url, "events": []}, "events"),
            ({"url": "ftp://x/", "events": ["*"]}, "url"),
            ({"url": "http://169.254.169.254/latest", "events": ["*"]}, "url"),
            ({"url": "http://[fe80::1]/", "events": ["*"]}, "url"),
            ({"url": receiver.url, "events": ["*"], "team_id": "no-such-team"}, "team_id"),
            ({"url": receiver.url, "events": ["*"], "shaper_policy": "no-such-shaper"}, "shaper_policy"),
            ({"url": receiver.url, "events": ["*"], "extra": 1}, "extra"),
        ]:
            r = a.post("/v1/admin/webhooks", json=body)
            assert r.status_code == 400, (body, r.text)
            assert r.json()["error"]["type"] == "invalid_request_error"
            assert param in r.json()["error"]["message"], r.text
        assert a.get("/v1/admin/webhooks/wh_nope").status_code == 404
        assert a.get(f"/v1/admin/webhooks/{sub['id']}/deliveries", params={"limit": 0}).status_code == 400
        assert a.get(f"/v1/admin/webhooks/{sub['id']}/deliveries", params={"state": "x"}).status_code == 400

        # Actions whose body is optional take none.
        r = a.post(f"/v1/admin/webhooks/{sub['id']}/deliveries/redrive")
        assert r.status_code == 200 and r.json()["redriven"] == 0

        assert a.delete(f"/v1/admin/webhooks/{sub['id']}").status_code == 200
        assert a.get(f"/v1/admin/webhooks/{sub['id']}").status_code == 404
    # Members may not manage webhooks.
    assert http.get("/v1/admin/webhooks").status_code == 403


def test_loopback_is_refused_unless_allowed(gateway, keys, receiver):
    # The session gateway has no [webhooks] section: loopback destinations are refused.
    with admin(gateway, keys) as a:
        r = a.post("/v1/admin/webhooks", json={"url": receiver.url, "events": ["*"]})
    assert r.status_code == 400 and "loopback" in r.json()["error"]["message"]


def test_team_scoped_subscriptions_see_only_their_team(hooked, keys, receiver):
    other = harness.Receiver()
    try:
        subscribe(hooked, keys, receiver, team_id="t1")
        with admin(hooked, keys) as a:
            a.post("/v1/admin/teams", json={"name": "other"}).raise_for_status()
            team = [t for t in a.get("/v1/admin/teams").json()["data"] if t["name"] == "other"][0]
            r = a.post("/v1/admin/webhooks", json={"url": other.url, "events": ["*"], "team_id": team["id"]})
            assert r.status_code == 201
            other.secret = r.json()["secret"]
        chat(hooked, keys, n=2)
        harness.wait_for(lambda: len(receiver.accepted()) == 2, what="t1's events")
        assert all(a["json"]["metadata"]["team_id"] == "t1" for a in receiver.accepted())
        assert other.received == []
    finally:
        other.close()


# Shaping in Wasm: the subscription's shaper formats each delivery; the host signs what it sends.

GUESTS = harness.REPO / "policies" / "target" / "wasm32-wasip2" / "release"
JS_SHAPER = harness.REPO / "target" / "examples" / "js_shaper.wasm"


def upload_shaper(gateway, keys, name, path, settings=None):
    import base64

    assert path.exists(), f"{path} is missing: scripts/test builds it"
    body = {"name": name, "component_base64": base64.b64encode(path.read_bytes()).decode()}
    if settings is not None:
        body["settings"] = settings
    with admin(gateway, keys) as a:
        r = a.post("/v1/admin/webhook-shapers", json=body, timeout=120)
    assert r.status_code == 201, r.text


def test_a_trapping_shaper_dead_letters_and_a_fixed_one_is_redriven(hooked, keys, receiver):
    upload_shaper(hooked, keys, "ops", GUESTS / "broken_shaper.wasm")  # traps on real events
    sub = subscribe(hooked, keys, receiver, shaper_policy="ops")
    [request_id] = chat(hooked, keys)
    [dead] = harness.wait_for(lambda: deliveries(hooked, keys, sub["id"], state="dead"), what="a dead letter")
    assert "shaper failed" in dead["last_error"] and dead["attempts"] == 1
    assert receiver.received == []  # never sent unshaped

    upload_shaper(hooked, keys, "ops", GUESTS / "webhook_shaper.wasm")  # the fixed one
    with admin(hooked, keys) as a:
        r = a.post(f"/v1/admin/webhooks/{sub['id']}/deliveries/redrive", json={"seqs": [dead["seq"]]})
    assert r.json()["redriven"] == 1
    [got] = harness.wait_for(lambda: receiver.accepted(), what="the re-driven delivery")
    assert got["signature_ok"] and got["json"]["request_id"] == request_id
    assert got["json"]["event"] == "request.completed"


def test_the_js_shaper_formats_a_slack_message(hooked, keys, receiver):
    upload_shaper(hooked, keys, "slack", JS_SHAPER)
    subscribe(hooked, keys, receiver, shaper_policy="slack")
    [request_id] = chat(hooked, keys)
    [got] = harness.wait_for(lambda: receiver.accepted(), what="a shaped delivery")
    assert got["signature_ok"]
    assert "request.completed" in got["json"]["text"] and "blocks" in got["json"]


def test_headers_a_shaper_must_not_set_never_reach_the_receiver(hooked, keys, receiver):
    upload_shaper(hooked, keys, "hdrs", GUESTS / "broken_shaper.wasm", settings="headers")
    subscribe(hooked, keys, receiver, shaper_policy="hdrs")
    chat(hooked, keys)
    [got] = harness.wait_for(lambda: receiver.accepted(), what="a shaped delivery")
    h = {k.lower(): v for k, v in got["headers"].items()}
    assert h["x-team"] == "t1"
    assert "authorization" not in h and "cookie" not in h
    assert h["host"].startswith("127.0.0.1") and h.get("connection") != "close"
    assert got["signature_ok"] and h["webhook-signature"] != "v1,forged"


def test_model_fallback_and_guardrail_events_are_delivered(sim, keys, tmp_path, receiver):
    models = harness.fleet_models(sim.url)
    for m in models:
        if m["id"] == "jais-30b-chat":
            m["fallbacks"] = ["allam-7b-instruct"]
    extra = "\n[webhooks]\n" + "".join(f"{k} = {harness.toml_value(v)}\n" for k, v in WEBHOOKS.items())
    extra += '\n[guardrail]\nsettings = \'{"default": "block"}\'\n'
    gw = harness.start_gateway(harness.gateway_config(models, keys["config"], extra=harness.UNLIMITED + extra),
                               tmp_path)
    try:
        subscribe(gw, keys, receiver, events=["model.fallback", "guardrail.violation"])
        harness.sim_set(sim, "jais-30b-chat", fail="error500")
        client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0)
        answer = client.chat.completions.create(model="jais-30b-chat", messages=HI)
        assert answer.model == "allam-7b-instruct"
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(
                model="jais-30b-chat", messages=[{"role": "user", "content": "mail me at ali@example.com"}])
        got = harness.wait_for(lambda: len(receiver.accepted()) == 2 and receiver.accepted(), what="2 events")
        fallback, violation = (g["json"] for g in got)
        assert fallback["event"] == "model.fallback"
        assert fallback["details"]["primary"] == "jais-30b-chat"
        assert fallback["details"]["fallback"] == "allam-7b-instruct"
        assert fallback["details"]["reason"] == "server_error"
        assert violation["event"] == "guardrail.violation"
        assert violation["details"] == {"violation_type": "pii_detected", "entities": ["email"],
                                        "action_taken": "request_blocked"}
        assert set(violation["metadata"]) == {"team_id", "user_id"}
    finally:
        harness.sim_set(sim, "*")
        gw.kill()


def test_budget_thresholds_are_announced_once_each_with_the_spend_that_crossed_them(sim, keys, tmp_path,
                                                                                     receiver):
    """Every completion token costs 1,000 micros and every request `max_tokens=5`: each spends
    exactly 5,000. A team budget of 50,000 crosses 50% at the 5th request, 80% at the 8th, 100%
    at the 10th; the key's budget of 100,000 crosses 50% at the 10th. Six of the ten are sent at
    once, so on the shared back end their settlements meet in one batch: each threshold is still
    announced once, with the spend of the request that crossed it."""
    models = harness.fleet_models(sim.url, input_cost_per_mtok=0.0, output_cost_per_mtok=1000.0)
    extra = "\n[webhooks]\n" + "".join(f"{k} = {harness.toml_value(v)}\n" for k, v in WEBHOOKS.items())
    gw = harness.start_gateway(harness.gateway_config(models, keys["config"], extra=harness.UNLIMITED + extra),
                               tmp_path)
    try:
        with admin(gw, keys) as a:
            team = a.post("/v1/admin/teams", json={"name": "thrifty", "plan": "enterprise", "budget": 0.05})
            assert team.status_code == 201, team.text
            key = a.post("/v1/admin/keys", json={"team_id": team.json()["id"], "role": "member", "budget": 0.1})
            assert key.status_code == 201, key.text
        subscribe(gw, keys, receiver, events=["cost.threshold"])
        secret = key.json()["key"]
        body = {"model": "jais-30b-chat", "messages": HI, "max_tokens": 5}
        with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as c:
            for _ in range(4):
                assert c.post("/v1/chat/completions", json=body).status_code == 200
            with ThreadPoolExecutor(6) as pool:
                answers = list(pool.map(lambda _: c.post("/v1/chat/completions", json=body), range(6)))
        assert [r.status_code for r in answers] == [200] * 6
        served = {r.headers["x-audit-trace-id"] for r in answers}

        got = harness.wait_for(lambda: len(receiver.accepted()) >= 4 and receiver.accepted(), what="4 events")
        events = sorted(((e["json"]["details"]["scope"], e["json"]["details"]["threshold"],
                          e["json"]["details"]["spend"], e["json"]["details"]["budget"]) for e in got))
        assert events == [("key", 50, 0.05, 0.1),
                          ("team", 50, 0.025, 0.05), ("team", 80, 0.04, 0.05), ("team", 100, 0.05, 0.05)]
        # The 5th request is the first of the six sent at once, so every crossing was one of them.
        assert all(e["json"]["request_id"] in served for e in got)
        with admin(gw, keys) as a:
            t = a.get(f"/v1/admin/teams/{team.json()['id']}").json()
            assert t["spend"]["spent"] == pytest.approx(0.05) and t["spend"]["reserved"] == 0
        assert len(receiver.accepted()) == 4
    finally:
        gw.kill()


def test_uploaded_shapers_and_subscriptions_survive_a_restart(sim, keys, tmp_path, receiver):
    config = webhooks_config(sim, keys)
    gw = harness.start_gateway(config, tmp_path)
    upload_shaper(gw, keys, "slack", JS_SHAPER)
    sub = subscribe(gw, keys, receiver, shaper_policy="slack")
    assert gw.stop() == 0
    gw = harness.start_gateway(config, tmp_path)
    try:
        with admin(gw, keys) as a:
            assert "slack" in [s["name"] for s in a.get("/v1/admin/webhook-shapers").json()["data"]]
            assert a.get(f"/v1/admin/webhooks/{sub['id']}").json()["shaper_policy"] == "slack"
        chat(gw, keys)
        [got] = harness.wait_for(lambda: receiver.accepted(), what="a shaped delivery after the restart")
        assert got["signature_ok"] and "text" in got["json"]
    finally:
        gw.kill()


def test_a_rotated_secret_signs_alongside_the_old_one_during_its_grace(hooked, keys, receiver):
    sub = subscribe(hooked, keys, receiver)
    old = sub["secret"]
    with admin(hooked, keys) as a:
        assert a.post(f"/v1/admin/webhooks/{sub['id']}/rotate", json={"grace_seconds": 10**9}).status_code == 400
        r = a.post(f"/v1/admin/webhooks/{sub['id']}/rotate", json={"grace_seconds": 3600})
        assert r.status_code == 200, r.text
        new = r.json()["secret"]
        assert new != old and new.startswith("whsec_") and r.json()["previous_secret_valid_until"]
        assert "secret" not in a.get(f"/v1/admin/webhooks/{sub['id']}").json()
    # A receiver still on the old secret verifies, and so does one on the new.
    chat(hooked, keys)
    [first] = harness.wait_for(lambda: receiver.accepted(), what="a delivery during the grace")
    assert first["signature_ok"] and len(first["headers"]["webhook-signature"].split()) == 2
    receiver.secret = new
    assert receiver.verify(first["headers"], first["body"])

    # Grace 0: the old secret stops at once.
    with admin(hooked, keys) as a:
        newer = a.post(f"/v1/admin/webhooks/{sub['id']}/rotate", json={"grace_seconds": 0}).json()["secret"]
    chat(hooked, keys)
    harness.wait_for(lambda: len(receiver.accepted()) == 2, what="a delivery after the second rotation")
    second = receiver.accepted()[1]
    assert len(second["headers"]["webhook-signature"].split()) == 1
    assert not receiver.verify(second["headers"], second["body"])  # still on `new`
    receiver.secret = newer
    assert receiver.verify(second["headers"], second["body"])
