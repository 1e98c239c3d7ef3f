"""Webhook shapers through the real binary (issue 7, "Shaping in Wasm"; docs/POLICIES.md,
"Webhook shapers"): the built-in `default` shaper gives the seed shape; the JavaScript example
(examples/js-shaper, built by scripts/build-examples) uploaded through
`POST /v1/admin/webhook-shapers` turns events into Slack-style messages; garbage and wrong-world
uploads are refused with 400; a shaper that traps on real events loads (it passes its smoke
call) and fails every event — what delivery sends to the dead-letter queue — until a fixed
shaper replaces it; headers a shaper must not set are dropped."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

import harness

JS_SHAPER = harness.REPO / "target" / "examples" / "js_shaper.wasm"
GUESTS = harness.REPO / "policies" / "target" / "wasm32-wasip2" / "release"
BROKEN_SHAPER = GUESTS / "broken_shaper.wasm"
DEFAULT_SHAPER = GUESTS / "webhook_shaper.wasm"

VIOLATION = {
    "id": "evt-0001",
    "event": "guardrail.violation",
    "timestamp": "2025-01-31T12:00:00.000Z",
    "request_id": "req-42",
    "details": {"violation_type": "pii_detected", "entities": ["email", "phone"],
                "action_taken": "request_blocked"},
    "metadata": {"team_id": "t1", "user_id": None},
}


def read(path) -> bytes:
    assert path.exists(), f"{path} is missing: run scripts/build-examples and cargo build (scripts/test does)"
    return path.read_bytes()


@pytest.fixture
def admin(gateway, keys):
    with httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {keys['admin']}"},
                      timeout=120) as c:
        yield c


def upload(admin, name, component: bytes, settings=None):
    body = {"name": name, "component_base64": base64.b64encode(component).decode()}
    if settings is not None:
        body["settings"] = settings
    return admin.post("/v1/admin/webhook-shapers", json=body)


def shape(admin, name, event=VIOLATION, target="https://hooks.slack.example/T000/B000"):
    return admin.post(f"/v1/admin/webhook-shapers/{name}/shape", json={"event": event, "target": target})


def test_the_default_shaper_gives_the_seed_shape(admin):
    listed = admin.get("/v1/admin/webhook-shapers").json()
    assert "default" in [s["name"] for s in listed["data"]]
    r = shape(admin, "default")
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["delivered"] is True and d["content_type"] == "application/json"
    assert d["headers"] == [] and d["dropped_headers"] == []
    body = json.loads(d["body"])
    assert body == {k: v for k, v in VIOLATION.items() if k != "id"}
    assert list(body) == ["event", "timestamp", "request_id", "details", "metadata"]


def test_the_js_example_formats_slack_messages(admin):
    r = upload(admin, "slack", read(JS_SHAPER), settings={"skip": ["routing.rule"], "username": "sovereign"})
    assert r.status_code == 201, r.text
    info = r.json()
    assert info["name"] == "slack" and info["world"] == "sovereign:policy/webhook-policy@0.1.0"
    assert info["size"] == JS_SHAPER.stat().st_size and len(info["sha256"]) == 64
    assert admin.get("/v1/admin/webhook-shapers/slack").json()["sha256"] == info["sha256"]
    assert "slack" in [s["name"] for s in admin.get("/v1/admin/webhook-shapers").json()["data"]]

    r = shape(admin, "slack")
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["delivered"] is True and d["content_type"] == "application/json"
    msg = json.loads(d["body"])
    assert msg["text"] == ":warning: guardrail.violation on req-42 — entities email, phone — request_blocked"
    assert msg["blocks"][0]["text"]["text"] == msg["text"]
    assert "team t1" in msg["blocks"][1]["elements"][0]["text"]
    assert msg["username"] == "sovereign"
    assert d["headers"] == [["x-sovereign-event-id", "evt-0001"]]

    cost = {"id": "evt-2", "event": "cost.threshold", "request_id": "req-7",
            "details": {"scope": "team", "scope_id": "t1", "threshold": 80, "spend": 8.0, "budget": 10.0,
                        "currency": "USD"}, "metadata": {"team_id": "t1", "user_id": "u1"}}
    msg = json.loads(shape(admin, "slack", cost).json()["body"])
    assert msg["text"] == ":moneybag: cost.threshold — team t1 passed 80% of its budget (8.00 USD of 10.00 USD)"
    unknown = {"event": "something.new", "details": {"a": 1}}
    msg = json.loads(shape(admin, "slack", unknown).json()["body"])
    assert msg["text"] == ':information_source: something.new — a=1'
    # Kinds in the settings' `skip` list are not delivered to this target.
    skipped = shape(admin, "slack", {"event": "routing.rule", "details": {"rule": "r", "policy": "p", "model": "m"}})
    assert skipped.json() == {"object": "shaped_delivery", "delivered": False}


@pytest.mark.parametrize("component, why", [
    (b"garbage, not a component", "not a valid component"),
    (None, "does not fit the `sovereign:policy/webhook-policy@0.1.0` world"),
])
def test_bad_uploads_are_400_and_replace_nothing(admin, component, why):
    component = component if component is not None else read(GUESTS / "rules_router.wasm")
    before = admin.get("/v1/admin/webhook-shapers/default").json()
    r = upload(admin, "default", component)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid_policy" and why in err["message"], err
    assert admin.get("/v1/admin/webhook-shapers/default").json() == before


def test_bad_requests(admin):
    good = base64.b64encode(read(DEFAULT_SHAPER)).decode()
    for body, param in [
        ({"name": "Bad Name", "component_base64": good}, "name"),
        ({"name": "-x", "component_base64": good}, "name"),
        ({"name": "x" * 64, "component_base64": good}, "name"),
        ({"name": "ok", "component_base64": "not base64!"}, "component_base64"),
        ({"name": "ok", "component_base64": good, "settings": 3}, "settings"),
    ]:
        r = admin.post("/v1/admin/webhook-shapers", json=body)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["param"] == param, r.text
    r = admin.post("/v1/admin/webhook-shapers", json={"name": "ok"})
    assert r.status_code == 400 and "component_base64" in r.json()["error"]["message"]
    assert admin.get("/v1/admin/webhook-shapers/nope").status_code == 404
    assert shape(admin, "nope").status_code == 404


def test_only_admins_manage_shapers(gateway, keys):
    r = httpx.get(f"{gateway.url}/v1/admin/webhook-shapers",
                  headers={"Authorization": f"Bearer {keys['member']}"})
    assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"


def test_a_trapping_shaper_loads_fails_every_event_and_a_fixed_one_takes_over(admin):
    # It passes its smoke call (event id `smoke-call`), so the upload succeeds...
    r = upload(admin, "ops", read(BROKEN_SHAPER))
    assert r.status_code == 201, r.text
    # ...and traps on real events: delivery would dead-letter them, never send them unshaped.
    r = shape(admin, "ops")
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "shaper_failed" and "trapped" in err["message"], err
    # Re-drive after swapping in a fixed shaper under the same name: shaped.
    assert upload(admin, "ops", read(DEFAULT_SHAPER)).status_code == 201
    r = shape(admin, "ops")
    assert r.status_code == 200 and r.json()["delivered"] is True, r.text


def test_forbidden_headers_are_dropped(admin):
    assert upload(admin, "hdrs", read(BROKEN_SHAPER), settings="headers").status_code == 201
    d = shape(admin, "hdrs").json()
    assert d["headers"] == [["x-team", "t1"]]
    assert sorted(d["dropped_headers"]) == sorted(
        ["authorization", "connection", "host", "transfer-encoding", "cookie", "webhook-signature"])
