"""Issue 49's console dashboards, their API through the real binary (plain HTTP): a key's limits
changed in place (and held to at once), keys searched and paged, spend by key
(`group_by=key`), and this replica's recent traffic and models' health (`/v1/admin/traffic`,
`/v1/admin/models`: requests, 4xx/5xx, latency and time to first token per minute, each model's
circuit breaker). Role checks: admin, auditor read-only, member 403."""

from __future__ import annotations

import httpx
import openai
import pytest

import harness

CHAT = {"model": "jais-30b-chat", "messages": [{"role": "user", "content": "hi"}]}
THRESHOLD = 3
HEALTH = harness.UNLIMITED + f"\n[health]\nfailure_threshold = {THRESHOLD}\nopen_ms = 60000\n"


def client(gw, secret: str) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30)


def ok(r: httpx.Response, status: int = 200) -> dict:
    assert r.status_code == status, r.text
    return r.json()


def bad(r: httpx.Response, param: str) -> None:
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param, r.text


def team_and_keys(a: httpx.Client, *names: str, role: str = "member") -> tuple[str, list[dict]]:
    team = ok(a.post("/v1/admin/teams", json={"name": "dash", "plan": "enterprise"}), 201)
    made = [ok(a.post("/v1/admin/keys", json={"team_id": team["id"], "role": role, "name": n}), 201) for n in names]
    return team["id"], made


def test_a_keys_limits_change_in_place_and_hold_at_once(sim, keys, gateway_factory):
    gw = gateway_factory(harness.fleet_models(sim.url),
                         extra="[access]\nip_requests_per_minute = 100000\nip_burst = 100000\n")
    with client(gw, keys["admin"]) as a:
        team, (key,) = team_and_keys(a, "limited")
        auditor = ok(a.post("/v1/admin/keys", json={"team_id": team, "role": "auditor"}), 201)
        changed = ok(a.patch(f"/v1/admin/keys/{key['id']}", json={"rpm": 2, "tpd": 100000, "budget": 1.5}))
        assert (changed["rpm"], changed["tpd"], changed["budget"]) == (2, 100000, 1.5)
        assert changed["spend"]["limit"] == 1.5
        got = ok(a.get(f"/v1/admin/keys/{key['id']}"))
        assert (got["rpm"], got["tpd"], got["budget"]) == (2, 100000, 1.5)
        # Held to at once: two requests this minute, then 429.
        with client(gw, key["key"]) as c:
            codes = [c.post("/v1/chat/completions", json=CHAT).status_code for _ in range(3)]
        assert codes == [200, 200, 429], codes
        # Fields left out stay; null clears one.
        cleared = ok(a.patch(f"/v1/admin/keys/{key['id']}", json={"tpd": None}))
        assert (cleared["rpm"], cleared["tpd"], cleared["budget"]) == (2, None, 1.5)
        # Bad input names its field; an unknown key is 404.
        for body, param in [({"rpm": 0}, "rpm"), ({"rpm": "ten"}, "rpm"), ({"tpd": -1}, "tpd"),
                            ({"budget": -1}, "budget"), ({"budget": "x"}, "budget"), ({"name": "x"}, "name")]:
            bad(a.patch(f"/v1/admin/keys/{key['id']}", json=body), param)
        assert a.patch("/v1/admin/keys/key_nope", json={"rpm": 5}).status_code == 404
    # Only an admin changes limits.
    for secret in (auditor["key"], keys["member"]):
        with client(gw, secret) as c:
            r = c.patch(f"/v1/admin/keys/{key['id']}", json={"rpm": 1000})
            assert r.status_code == 403, r.text
            assert r.json()["error"]["code"] == "insufficient_permissions"


def test_keys_are_searched_by_name_id_or_prefix_and_paged(gateway, keys):
    with client(gateway, keys["admin"]) as a:
        team, made = team_and_keys(a, "Alpha-one", "alpha-two", "alpha-three", "beta-one")
        names = lambda body: [k["name"] for k in body["data"]]  # noqa: E731
        found = ok(a.get("/v1/admin/keys", params={"team_id": team, "q": "ALPHA"}))
        assert names(found) == ["Alpha-one", "alpha-two", "alpha-three"]
        assert (found["total"], found["has_more"]) == (3, False)
        assert ok(a.get("/v1/admin/keys", params={"q": made[3]["prefix"]}))["data"][0]["id"] == made[3]["id"]
        assert names(ok(a.get("/v1/admin/keys", params={"q": made[1]["id"]}))) == ["alpha-two"]
        # Pages: oldest first, `after` the previous page's last id.
        first = ok(a.get("/v1/admin/keys", params={"team_id": team, "q": "alpha", "limit": 2}))
        assert names(first) == ["Alpha-one", "alpha-two"]
        assert (first["has_more"], first["last_id"], first["total"]) == (True, made[1]["id"], 3)
        rest = ok(a.get("/v1/admin/keys", params={"team_id": team, "q": "alpha", "limit": 2, "after": first["last_id"]}))
        assert names(rest) == ["alpha-three"] and rest["has_more"] is False
        assert ok(a.get("/v1/admin/keys", params={"q": "no-such-key-anywhere"}))["data"] == []
        # Without a limit, every key (as before).
        assert len(ok(a.get("/v1/admin/keys", params={"team_id": team}))["data"]) == 4
        for params, param in [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"limit": "x"}, "limit"),
                              ({"after": "key_nope"}, "after"), ({"sort": "name"}, "query")]:
            bad(a.get("/v1/admin/keys", params=params), param)


def test_spend_by_key_is_one_row_per_key_biggest_first(sim, keys, gateway_factory):
    # Prompts free, each completion token 0.001: `max_tokens=5` costs exactly 0.005.
    gw = gateway_factory(harness.fleet_models(sim.url, input_cost_per_mtok=0.0, output_cost_per_mtok=1000.0))
    with client(gw, keys["admin"]) as a:
        team, (small, big) = team_and_keys(a, "small", "big")
        for key, models in [(small, ["jais-30b-chat"]), (big, ["jais-30b-chat", "allam-7b-instruct", "allam-7b-instruct"])]:
            with client(gw, key["key"]) as c:
                for i, m in enumerate(models):
                    ok(c.post("/v1/chat/completions", json={**CHAT, "model": m, "max_tokens": 5, "user": f"u{i}"}))
        plain = ok(a.get("/v1/admin/usage", params={"team_id": team}))
        assert len(plain["data"]) == 4  # per key, model and actor
        by_key = ok(a.get("/v1/admin/usage", params={"team_id": team, "group_by": "key"}))
        rows = [(r["key_id"], r["model"], r["actor_id"], r["requests"], r["spend"]) for r in by_key["data"]]
        assert rows == [(big["id"], None, None, 3, pytest.approx(0.015)), (small["id"], None, None, 1, pytest.approx(0.005))]
        assert by_key["total"] == plain["total"]
        bad(a.get("/v1/admin/usage", params={"group_by": "model"}), "group_by")


def test_recent_traffic_and_model_health_as_this_replica_sees_them(sim, keys, gateway_factory):
    gw = gateway_factory(harness.fleet_models(sim.url), extra=HEALTH)
    with client(gw, keys["admin"]) as a:
        team, (auditor,) = team_and_keys(a, "auditor", role="auditor")
        sdk = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)
        for _ in range(3):
            sdk.chat.completions.create(**CHAT)
        chunks = list(sdk.chat.completions.create(**CHAT, stream=True))
        assert chunks
        harness.sim_set(sim, "allam-7b-instruct", fail="error500")
        try:
            for _ in range(THRESHOLD):
                with pytest.raises(openai.InternalServerError):
                    sdk.chat.completions.create(**{**CHAT, "model": "allam-7b-instruct"})
        finally:
            harness.sim_set(sim, "allam-7b-instruct", fail="none")

        def traffic(model=None, minutes=5):
            return ok(a.get("/v1/admin/traffic", params={"minutes": minutes, **({"model": model} if model else {})}))

        # A stream is counted when its body is done, just after the client read its end.
        jais = harness.wait_for(lambda: (t := traffic("jais-30b-chat"))["total"]["requests"] == 4 and t,
                                what="four jais requests counted")
        assert len(jais["data"]) == 5 and jais["minutes"] == 5 and jais["retained_minutes"] == 360
        assert jais["data"] == sorted(jais["data"], key=lambda d: d["minute"])
        assert sum(d["requests"] for d in jais["data"]) == 4
        t = jais["total"]
        assert (t["client_errors"], t["server_errors"], t["error_rate"], t["streams"]) == (0, 0, 0.0, 1)
        assert t["latency_ms"]["p50"] is not None and t["latency_ms"]["p50"] <= t["latency_ms"]["p95"]
        assert t["ttft_ms"]["p50"] is not None
        allam = traffic("allam-7b-instruct")["total"]
        assert (allam["requests"], allam["server_errors"], allam["error_rate"], allam["streams"]) == (THRESHOLD, THRESHOLD, 1.0, 0)
        assert allam["ttft_ms"] == {"mean": None, "p50": None, "p95": None}
        everything = traffic()["total"]
        assert everything["requests"] == 4 + THRESHOLD and everything["server_errors"] == THRESHOLD
        assert traffic("qwen2.5-coder-32b")["total"]["requests"] == 0

        models = ok(a.get("/v1/admin/models"))
        by_id = {m["id"]: m for m in models["data"]}
        assert set(by_id) == {m["id"] for m in harness.FLEET}
        assert (by_id["allam-7b-instruct"]["breaker"], by_id["allam-7b-instruct"]["in_rotation"]) == ("open", False)
        j = by_id["jais-30b-chat"]
        assert (j["breaker"], j["in_rotation"], j["region"], j["local"], j["requests"]) == ("closed", True, "sa-riyadh-1", True, 4)
        assert by_id["qwen2.5-coder-32b"]["local"] is False
        assert by_id["allam-7b-instruct"]["error_rate"] == 1.0

        for params, param in [({"minutes": 0}, "minutes"), ({"minutes": 361}, "minutes"), ({"minutes": "x"}, "minutes"),
                              ({"model": "gpt-4o"}, "model"), ({"team_id": team}, "query")]:
            bad(a.get("/v1/admin/traffic", params=params), param)
    # An auditor reads both (no team's data in them); a member does not.
    with client(gw, auditor["key"]) as c:
        assert c.get("/v1/admin/traffic").status_code == 200
        assert c.get("/v1/admin/models").status_code == 200
    with client(gw, keys["member"]) as c:
        for path in ("/v1/admin/traffic", "/v1/admin/models"):
            r = c.get(path)
            assert r.status_code == 403 and r.json()["error"]["code"] == "insufficient_permissions", r.text
