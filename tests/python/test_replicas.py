"""Issue 17: two replicas of the real binary on one PostgreSQL and one Redis (both private to this
module, started on free ports so they can be killed and restarted): config-file teams and keys
bootstrapped by both at the same moment, request rates exact across replicas, a revocation on one
replica refused on the other within 100 ms, team changes, Redis failing closed and open and
recovering, PostgreSQL restarting under the replicas."""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import harness
import services

CHAT = {"model": "jais-30b-chat", "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture(scope="module")
def pg():
    p = services.PrivatePostgres()
    yield p
    p.close()


@pytest.fixture(scope="module")
def redis_server():
    r = services.PrivateRedis()
    yield r
    r.close()


def start_replicas(sim, keys, pg, redis_server, base: Path, db: str, n: int = 2,
                   on_failure: str = "closed", extra: str = "", models: list[dict] | None = None,
                   first: int = 0, redis: bool = True, redis_timeout_ms: int = 200) -> list[harness.Proc]:
    """`n` replicas with the same config file but for `sovereign_id` (and, by the harness,
    `data_dir` per directory), started at the same moment. Redis calls give up after 200 ms by
    default, so the tests that kill Redis see the failure mode at once."""
    env = {"SOVEREIGN_STORE_URL": pg.database(db)}
    backends = "\n[store]\nbackend = \"postgres\"\n"
    if redis:
        env |= {"SOVEREIGN_REDIS_URL": redis_server.url(), "SOVEREIGN_SHARED_NAMESPACE": db}
        backends += ("\n[shared]\nbackend = \"redis\"\n"
                     f"on_failure = \"{on_failure}\"\ntimeout_ms = {redis_timeout_ms}\n")

    def one(i: int) -> harness.Proc:
        d = base / f"replica-{i}"
        d.mkdir(parents=True, exist_ok=True)
        config = harness.gateway_config(models or harness.fleet_models(sim.url), keys["config"],
                                        sovereign_id=f"replica-{i}",
                                        extra=harness.UNLIMITED + backends + extra)
        return harness.start_gateway(config, d, env=env)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(first, first + n)))


def stop_all(replicas):
    for r in replicas:
        r.kill()


def admin(gw, keys) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=30)


def new_key(a: httpx.Client, team_id: str, **fields) -> dict:
    r = a.post("/v1/admin/keys", json={"team_id": team_id, "role": "member", **fields})
    assert r.status_code == 201, r.text
    return r.json()


def new_team(a: httpx.Client, **fields) -> dict:
    r = a.post("/v1/admin/teams", json={"name": "acme", "plan": "enterprise", **fields})
    assert r.status_code == 201, r.text
    return r.json()


def test_replicas_bootstrapping_the_same_config_at_once_share_teams_and_keys(sim, keys, pg, redis_server,
                                                                             tmp_path):
    replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "boot", n=3)
    try:
        for r in replicas:
            with admin(r, keys) as a:
                assert a.get("/v1/models").status_code == 200
                listed = a.get("/v1/admin/keys").json()["data"]
                assert len([k for k in listed if k["name"] in ("member", "admin")]) == 2, listed
        # A team and key made on one replica work on every other.
        with admin(replicas[0], keys) as a:
            key = new_key(a, new_team(a)["id"])
        for i, r in enumerate(replicas):
            got = httpx.post(f"{r.url}/v1/chat/completions", json=CHAT,
                             headers={"Authorization": f"Bearer {key['key']}"}, timeout=30)
            assert got.status_code == 200, got.text
            assert got.headers["x-sovereign-id"] == f"replica-{i}"
    finally:
        stop_all(replicas)


def test_a_request_rate_is_exact_across_two_replicas(sim, keys, pg, redis_server, tmp_path):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "rate")
    try:
        with admin(a_, keys) as a:
            key = new_key(a, new_team(a)["id"], rpm=10)
        # rpm 10 (burst 10): 40 requests split over both replicas at once admit exactly 10.
        targets = [a_, b_] * 20

        def call(gw):
            return httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT,
                              headers={"Authorization": f"Bearer {key['key']}"}, timeout=30)

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(call, targets))
        codes = sorted(r.status_code for r in results)
        assert codes == [200] * 10 + [429] * 30, codes
        served_by = {r.headers["x-sovereign-id"] for r in results if r.status_code == 200}
        assert served_by == {"replica-0", "replica-1"}, served_by
        for r in results:
            assert r.headers["x-ratelimit-limit"] == "10"
            if r.status_code == 429:
                assert 1 <= int(r.headers["retry-after"]) <= 60
                assert r.json()["error"]["type"] == "rate_limit_exceeded"
    finally:
        stop_all(replicas)


def first_refusal(client: httpx.Client, auth: dict, returned: float, every: float = 0.002,
                  give_up: float = 1.0) -> tuple[float, float]:
    """Probes replica B from `returned` on, one probe every `every` seconds, each on its own
    thread: an accepted probe waits for its durable journal entry, and one slow disk sync must
    not hold back the next probe (a loop that waits for each answer measured the disk, not the
    revocation). Returns, relative to `returned`, when the first refused probe was sent and when
    the last accepted one was."""
    results: list[tuple[float, httpx.Response]] = []
    lock = threading.Lock()
    refused = threading.Event()

    def probe():
        sent = time.monotonic() - returned
        r = client.get("/v1/models", headers=auth)
        with lock:
            results.append((sent, r))
        if r.status_code != 200:
            refused.set()

    with ThreadPoolExecutor(32) as pool:
        futures = []
        next_at = returned
        while not refused.is_set():
            now = time.monotonic()
            assert now - returned < give_up, "still accepted on B after 1 s"
            if now >= next_at:
                futures.append(pool.submit(probe))
                next_at += every
            else:
                refused.wait(next_at - now)
        for f in futures:
            f.result()
    for _, r in results:
        assert r.status_code in (200, 401), r.text
        if r.status_code == 401:
            assert r.json()["error"]["code"] == "revoked_api_key"
    refused_at = min(t for t, r in results if r.status_code == 401)
    accepted_until = max((t for t, r in results if r.status_code == 200), default=0.0)
    return refused_at, accepted_until


def test_a_key_revoked_on_one_replica_is_refused_on_the_other_within_100_ms(sim, keys, pg, redis_server,
                                                                           tmp_path, record_property):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "revoke")
    try:
        delays, accepted = [], []
        with admin(a_, keys) as a, httpx.Client(base_url=b_.url, timeout=30) as b:
            team = new_team(a)
            for _ in range(50):
                key = new_key(a, team["id"])
                auth = {"Authorization": f"Bearer {key['key']}"}
                # Cached on B before the revocation.
                assert b.get("/v1/models", headers=auth).status_code == 200
                assert a.post(f"/v1/admin/keys/{key['id']}/revoke").status_code == 200
                refused_at, accepted_until = first_refusal(b, auth, time.monotonic())
                delays.append(refused_at)
                accepted.append(accepted_until)
        delays.sort()
        p50 = statistics.median(delays) * 1000
        p99 = delays[int(len(delays) * 0.99) - 1] * 1000
        print(f"revocation reached the other replica: p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {delays[-1]*1000:.2f} ms "
              f"(the first refused request's send; the last accepted one was sent at most "
              f"{max(accepted)*1000:.2f} ms after the revoke returned)")
        record_property("revocation_p50_ms", round(p50, 2))
        record_property("revocation_p99_ms", round(p99, 2))
        assert delays[-1] < 0.1, f"slowest {delays[-1]*1000:.1f} ms"
        assert max(accepted) < 0.1, f"a request sent {max(accepted)*1000:.1f} ms after the revoke was accepted"
    finally:
        stop_all(replicas)


def test_a_budget_is_never_exceeded_by_200_requests_over_two_replicas_streams_included(sim, keys, pg,
                                                                                      redis_server, tmp_path):
    """Prompts are free and a completion token costs 1,000 micros: a request with
    `max_tokens=5` (whose answer is longer) reserves and spends exactly R = 5,000 micros. With a
    budget of 50 R shared by two replicas, every moment satisfies spent + reserved <= B across
    both, so exactly 50 of 200 are served (half of them streamed), whatever the interleaving."""
    priced = harness.fleet_models(sim.url, input_cost_per_mtok=0.0, output_cost_per_mtok=1000.0)
    # Not a test of Redis faults: 200 requests at once queue their admissions, and on a loaded
    # 2-core CI machine 200 ms for the whole wait once answered two of them 503.
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "budget", models=priced,
                                       redis_timeout_ms=5000)
    try:
        with admin(a_, keys) as a:
            team = new_team(a, budget=0.25)
            key = new_key(a, team["id"])
        auth = {"Authorization": f"Bearer {key['key']}"}

        def call(i: int):
            gw = (a_, b_)[i % 2]
            stream = i % 4 >= 2
            body = {**CHAT, "max_tokens": 5, "stream": stream}
            r = httpx.post(f"{gw.url}/v1/chat/completions", json=body, headers=auth, timeout=60)
            if stream and r.status_code == 200:
                assert r.text.rstrip().endswith("data: [DONE]"), r.text[-200:]
            return r

        with ThreadPoolExecutor(100) as pool:
            results = list(pool.map(call, range(200)))
        served = [r for r in results if r.status_code == 200]
        refused = [r for r in results if r.status_code == 429]
        others = [(r.status_code, r.text[:200]) for r in results if r.status_code not in (200, 429)]
        assert len(served) == 50 and len(refused) == 150, (len(served), len(refused), others[:3])
        assert {r.headers["x-sovereign-id"] for r in served} == {"replica-0", "replica-1"}
        for r in refused:
            assert r.json()["error"]["type"] == "insufficient_quota"
        with admin(b_, keys) as b:
            # Streams settle as their last frame goes out: wait for the counters, then check.
            harness.wait_for(lambda: b.get(f"/v1/admin/teams/{team['id']}").json()["spend"]["reserved"] == 0,
                             timeout=10, what="every reservation settled")
            spend = b.get(f"/v1/admin/teams/{team['id']}").json()["spend"]
            assert spend["spent"] == pytest.approx(0.25) and spend["remaining"] == 0, spend
            harness.wait_for(lambda: b.get("/v1/admin/usage", params={"team_id": team["id"]})
                             .json()["total"]["requests"] == 50, timeout=10, what="usage of 50 requests")
    finally:
        stop_all(replicas)


def metric(gw, name: str) -> int:
    for line in httpx.get(f"{gw.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_far_from_its_end_a_budget_is_drawn_on_leased_headroom_and_given_back_on_change(
        sim, keys, pg, redis_server, tmp_path):
    """With a budget far from exhausted, a replica reserves a slice of headroom with one request
    and draws the next ones on it without a Redis round trip; what it holds counts as reserved
    for every replica; when another replica changes the team, the headroom comes back."""
    priced = harness.fleet_models(sim.url, input_cost_per_mtok=0.0, output_cost_per_mtok=1000.0)
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "lease", models=priced)
    try:
        with admin(a_, keys) as a:
            team = new_team(a, budget=100.0)  # 20,000 requests of R = 5,000 micros
            key = new_key(a, team["id"])
        auth = {"Authorization": f"Bearer {key['key']}"}
        draws, acquires = metric(a_, "sovereign_shared_budget_draws_total"), \
            metric(a_, "sovereign_shared_budget_acquires_total")
        with httpx.Client(base_url=a_.url, headers=auth, timeout=30) as c:
            for _ in range(40):
                assert c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 5}).status_code == 200
        drawn = metric(a_, "sovereign_shared_budget_draws_total") - draws
        asked = metric(a_, "sovereign_shared_budget_acquires_total") - acquires
        assert drawn + asked == 40 and asked <= 4, (drawn, asked)  # 16 requests' worth per lease
        with admin(b_, keys) as b:
            # B sees every request spent, and A's undrawn headroom held.
            harness.wait_for(lambda: b.get(f"/v1/admin/teams/{team['id']}").json()["spend"]["spent"]
                             == pytest.approx(0.2), timeout=10, what="A's settlements")
            spend = b.get(f"/v1/admin/teams/{team['id']}").json()["spend"]
            assert 0 < spend["reserved"] <= 16 * 0.005 + 1e-9, spend
            assert spend["remaining"] == pytest.approx(100.0 - 0.2 - spend["reserved"])
            # A change on B reaches A, which gives its headroom back.
            assert b.patch(f"/v1/admin/teams/{team['id']}", json={"budget": 50.0}).status_code == 200
            harness.wait_for(lambda: b.get(f"/v1/admin/teams/{team['id']}").json()["spend"]["reserved"] == 0,
                             timeout=10, what="A's headroom given back")
            assert b.get(f"/v1/admin/teams/{team['id']}").json()["spend"]["remaining"] == pytest.approx(49.8)
    finally:
        stop_all(replicas)


def test_a_replica_killed_under_load_leaves_the_other_serving_and_its_journal_verifies(sim, keys, pg,
                                                                                     redis_server, tmp_path):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "kill")
    stop = threading.Event()
    codes = {"a": [], "b": []}
    auth = {"Authorization": f"Bearer {keys['member']}"}

    def load(name, gw):
        with httpx.Client(base_url=gw.url, headers=auth, timeout=10) as c:
            while not stop.is_set():
                try:
                    codes[name].append(c.post("/v1/chat/completions", json=CHAT).status_code)
                except httpx.HTTPError:
                    codes[name].append(None)
    threads = [threading.Thread(target=load, args=(n, g)) for n, g in (("a", a_), ("b", b_)) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        harness.wait_for(lambda: len(codes["a"]) >= 50 and len(codes["b"]) >= 50, timeout=30,
                         what="load on both replicas")
        a_.proc.kill()  # SIGKILL, mid-load
        a_.proc.wait()
        before = len(codes["b"])
        harness.wait_for(lambda: len(codes["b"]) >= before + 100, timeout=30,
                         what="the surviving replica serving on")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert codes["b"] and all(c == 200 for c in codes["b"]), sorted(set(codes["b"]), key=str)
    try:
        # The killed replica's own journal verifies (a torn last line is cut at open), and it
        # comes back on the same config and data.
        rust, python = harness.verify_journal(harness.journal_dir(tmp_path / "replica-0"))
        assert rust.returncode == 0, rust.stdout + rust.stderr
        assert python.returncode == 0, python.stdout + python.stderr
        again = start_replicas(sim, keys, pg, redis_server, tmp_path, "kill", n=1)[0]
        replicas.append(again)
        r = httpx.post(f"{again.url}/v1/chat/completions", json=CHAT, headers=auth, timeout=30)
        assert r.status_code == 200 and r.headers["x-sovereign-id"] == "replica-0"
    finally:
        stop_all(replicas)


def test_team_changes_and_deletion_reach_the_other_replica(sim, keys, pg, redis_server, tmp_path):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "teams")
    try:
        with admin(a_, keys) as a:
            team = new_team(a)
            key = new_key(a, team["id"])
            auth = {"Authorization": f"Bearer {key['key']}"}
            assert httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth).status_code == 200
            # Restricting the team's models on A: B refuses the model at once.
            r = a.patch(f"/v1/admin/teams/{team['id']}", json={"allowed_models": ["allam-7b-instruct"]})
            assert r.status_code == 200, r.text
            refused = httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth)
            assert refused.status_code in (403, 404), refused.text
            assert a.delete(f"/v1/admin/teams/{team['id']}").status_code == 200
            gone = httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth)
            assert gone.status_code == 401, gone.text
    finally:
        stop_all(replicas)


@pytest.mark.parametrize("mode", ["closed", "open"])
def test_redis_killed_then_back(sim, keys, pg, redis_server, tmp_path, mode):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, f"redis{mode}",
                                       on_failure=mode)
    try:
        with admin(a_, keys) as a:
            key = new_key(a, new_team(a)["id"], rpm=6000)
        auth = {"Authorization": f"Bearer {key['key']}"}
        assert httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth).status_code == 200
        redis_server.kill()
        try:
            r = httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth, timeout=10)
            if mode == "closed":
                assert r.status_code == 503, r.text
                assert r.json()["error"]["code"] == "shared_state_unavailable"
                assert r.headers["retry-after"] == "1"
            else:
                assert r.status_code == 200, r.text
                assert harness.metrics(b_)["sovereign_shared_fail_open_total"] >= 1
            assert harness.metrics(b_)["sovereign_shared_failures_total"] >= 1
        finally:
            redis_server.start()
        # Recovery by itself: the connection comes back, and so do changes between replicas.
        harness.wait_for(lambda: httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT,
                                            headers=auth).status_code == 200,
                         timeout=15, what="requests admitted again after Redis returned")
        with admin(a_, keys) as a:
            harness.wait_for(lambda: _revoke_reaches(a, b_, key_team=None, keys=keys),
                             timeout=15, what="revocations carried again")
    finally:
        stop_all(replicas)


def _revoke_reaches(a: httpx.Client, b_, key_team, keys) -> bool:
    """A new key, cached on B, revoked on A: refused on B within 100 ms (the pub/sub path, not
    the cache's time-to-live)."""
    team = new_team(a)
    key = new_key(a, team["id"])
    auth = {"Authorization": f"Bearer {key['key']}"}
    if httpx.get(f"{b_.url}/v1/models", headers=auth).status_code != 200:
        return False
    a.post(f"/v1/admin/keys/{key['id']}/revoke")
    deadline = time.monotonic() + 0.1
    while time.monotonic() < deadline:
        if httpx.get(f"{b_.url}/v1/models", headers=auth).status_code == 401:
            return True
    return False


def test_postgres_restarted_under_the_replicas(sim, keys, pg, redis_server, tmp_path):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "pgrestart")
    try:
        with admin(a_, keys) as a:
            key = new_key(a, new_team(a)["id"])
        auth = {"Authorization": f"Bearer {key['key']}"}
        assert httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth).status_code == 200
        pg.stop("fast")
        try:
            # A cached key keeps working while the database is away.
            r = httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth, timeout=30)
            assert r.status_code == 200, r.text
            # An admin write cannot be durable: a clear 5xx, not a hang.
            with admin(a_, keys) as a:
                r = a.post("/v1/admin/teams", json={"name": "x", "plan": "enterprise"})
                assert r.status_code in (500, 503), r.text
                assert r.json()["error"]["type"] == "server_error"
        finally:
            pg.start()
        with admin(a_, keys) as a:
            harness.wait_for(lambda: a.post("/v1/admin/teams", json={"name": "back", "plan": "enterprise"})
                             .status_code == 201, timeout=30, what="writes after PostgreSQL returned")
            key2 = new_key(a, new_team(a)["id"])
        r = httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT,
                       headers={"Authorization": f"Bearer {key2['key']}"}, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        stop_all(replicas)


def test_each_webhook_event_is_delivered_once_with_both_replicas_delivering(sim, keys, pg, redis_server,
                                                                              tmp_path):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "hooks",
                                       extra="\n[webhooks]\nallow_loopback = true\nrequest_completed_after_ms = 0\n")
    rx = harness.Receiver()
    try:
        with admin(a_, keys) as a, admin(b_, keys) as b:
            made = a.post("/v1/admin/webhooks", json={"url": rx.url, "events": ["request.completed"]})
            assert made.status_code == 201, made.text
            rx.secret = made.json()["secret"]
            hook = made.json()["id"]
            # B hears of the subscription made on A.
            harness.wait_for(lambda: b.get(f"/v1/admin/webhooks/{hook}").status_code == 200,
                             timeout=5, what="the subscription on the other replica")
        auth = {"Authorization": f"Bearer {keys['member']}"}
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda gw: httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT,
                                                        headers=auth, timeout=30).status_code,
                                  [a_, b_] * 20))
        assert codes == [200] * 40
        harness.wait_for(lambda: len(rx.accepted()) >= 40, timeout=30, what="40 deliveries")
        # Once no delivery is pending anywhere, no worker can send one again: count then.
        with admin(a_, keys) as a, admin(b_, keys) as b:
            harness.wait_for(lambda: all(c.get(f"/v1/admin/webhooks/{hook}/deliveries",
                                               params={"state": "pending"}).json()["data"] == []
                                         for c in (a, b)),
                             timeout=30, what="no pending delivery on either replica")
            delivered = a.get(f"/v1/admin/webhooks/{hook}/deliveries", params={"state": "delivered", "limit": 100})
            assert len(delivered.json()["data"]) == 40, delivered.text
        # One delivery per event: no `webhook-id` twice, and every request's event there.
        ids = [{k.lower(): v for k, v in r["headers"].items()}["webhook-id"] for r in rx.accepted()]
        assert len(ids) == 40 and len(set(ids)) == 40, f"{len(ids)} deliveries, {len(set(ids))} distinct"
        assert len({r["json"]["request_id"] for r in rx.accepted()}) == 40
        assert all(r["signature_ok"] for r in rx.received)
    finally:
        rx.close()
        stop_all(replicas)


def test_a_router_version_and_a_guardrail_swapped_on_one_replica_are_used_by_the_other(sim, keys, pg,
                                                                                        redis_server, tmp_path):
    routing = "name: start\nroutes: []\ndefault: qwen2.5-coder-32b\n"
    for i in range(2):
        (tmp_path / f"replica-{i}").mkdir(parents=True, exist_ok=True)
        (tmp_path / f"replica-{i}" / "routing.yaml").write_text(routing)
    guard = '\n[guardrail]\nsettings = \'{"default": "redact"}\'\n'
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "policies",
                                       extra=guard + '\n[routing]\ndocument = "routing.yaml"\n')
    auth = {"Authorization": f"Bearer {keys['member']}"}

    def routed_on_b(content="hi"):
        r = httpx.post(f"{b_.url}/v1/chat/completions", headers=auth, timeout=30,
                       json={"model": "auto-router", "messages": [{"role": "user", "content": content}]})
        return r

    try:
        assert routed_on_b().json()["model"] == "qwen2.5-coder-32b"
        doc = "name: to-magistral\nroutes: []\ndefault: magistral-small\n"
        with admin(a_, keys) as a, admin(b_, keys) as b:
            up = a.post("/v1/admin/policies", json={"document": doc, "activate": True})
            assert up.status_code == 201, up.text
            version = up.json()["id"]
            # Used by B once it has loaded the version (compiled and smoke-called, as any upload).
            harness.wait_for(lambda: routed_on_b().json()["model"] == "magistral-small", timeout=20,
                             what="replica B routing with the version uploaded on A")
            assert routed_on_b().headers["x-route-policy"] == "to-magistral"
            listed = b.get("/v1/admin/policies").json()
            assert listed["active"] == version, listed
            # A second version uploaded on A without activating it, activated on B: A follows.
            up2 = a.post("/v1/admin/policies", json={"document": doc.replace("to-magistral", "to-llama")
                                                     .replace("magistral-small", "llama-3.2-3b-instruct"),
                                                     "activate": False})
            assert up2.status_code == 201 and not up2.json()["active"], up2.text
            harness.wait_for(lambda: b.get("/v1/admin/policies").json()["data"][-1]["id"] == up2.json()["id"],
                             timeout=20, what="replica B loading the second version")
            assert b.post(f"/v1/admin/policies/{up2.json()['id']}/activate").status_code == 200
            # An activation is a switch between loaded versions: A follows within milliseconds.
            harness.wait_for(lambda: httpx.post(f"{a_.url}/v1/chat/completions", headers=auth, timeout=30,
                                                json={"model": "auto-router",
                                                      "messages": [{"role": "user", "content": "hi"}]}
                                                ).headers["x-route-policy"] == "to-llama",
                             timeout=2, what="replica A following the activation on B")
            # The guardrail: email blocked on A → blocked on B.
            ask = "mail me at hala@example.com"
            assert routed_on_b(ask).status_code == 200
            r = a.post("/v1/admin/guardrail", json={"settings": {"default": "redact", "entities": {"email": "block"}}})
            assert r.status_code == 200, r.text
            harness.wait_for(lambda: routed_on_b(ask).status_code == 400, timeout=20,
                             what="replica B blocking with the guardrail settings swapped on A")
            assert routed_on_b(ask).json()["error"]["type"] == "guardrail_violation"
        # A replica started now takes the cluster's active versions.
        (tmp_path / "replica-2").mkdir(parents=True)
        (tmp_path / "replica-2" / "routing.yaml").write_text(routing)
        c_ = start_replicas(sim, keys, pg, redis_server, tmp_path, "policies", n=1, first=2,
                            extra=guard + '\n[routing]\ndocument = "routing.yaml"\n')[0]
        replicas.append(c_)
        r = httpx.post(f"{c_.url}/v1/chat/completions", headers=auth, timeout=30,
                       json={"model": "auto-router", "messages": [{"role": "user", "content": "mail me at hala@example.com"}]})
        assert r.status_code == 400, r.text
    finally:
        stop_all(replicas)


def test_a_document_uploaded_on_one_replica_is_cited_by_the_other_until_deleted_there(sim, keys, pg,
                                                                                      redis_server, tmp_path):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "docs")
    auth = {"Authorization": f"Bearer {keys['member']}"}
    text = ("Customer records must be kept for ten years after the account is closed.\n\n"
            "Backups are encrypted and stored in the Riyadh region only.\n").encode()
    query = {"query": "How long must customer records be kept?", "collection": "policies"}

    def cited(gw) -> set[str]:
        r = httpx.post(f"{gw.url}/v1/rag/query", json=query, headers=auth, timeout=60)
        assert r.status_code == 200, r.text
        return {c["document_id"] for c in r.json()["citations"]}

    try:
        up = httpx.post(f"{a_.url}/v1/documents/upload", headers=auth, timeout=120, params={"wait": "true"},
                        files={"file": ("retention.txt", text, "text/plain")}, data={"collection": "policies"})
        assert up.status_code == 201, up.text
        doc = up.json()["id"]
        assert doc in cited(a_)
        # B indexes it from the store when it hears of it (announced before the upload returned).
        harness.wait_for(lambda: doc in cited(b_), timeout=5, what="the other replica citing the document")
        got = httpx.get(f"{b_.url}/v1/documents/{doc}", headers=auth)
        assert got.status_code == 200 and got.json()["filename"] == "retention.txt"
        # The same bytes uploaded on B are the same document (the re-upload check is shared).
        again = httpx.post(f"{b_.url}/v1/documents/upload", headers=auth, timeout=120,
                           files={"file": ("retention.txt", text, "text/plain")}, data={"collection": "policies"})
        assert again.json()["id"] == doc, again.text
        assert httpx.delete(f"{b_.url}/v1/documents/{doc}", headers=auth).status_code == 200
        harness.wait_for(lambda: doc not in cited(a_), timeout=5, what="the deletion reaching the other replica")
    finally:
        stop_all(replicas)


def test_activity_logs_on_any_replica_answer_for_all_and_verification_walks_every_chain(sim, keys, pg,
                                                                                       redis_server, tmp_path):
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "journal")
    auth = {"Authorization": f"Bearer {keys['member']}"}
    try:
        ids = {}
        for name, gw in (("replica-0", a_), ("replica-1", b_), ("replica-0", a_)):
            r = httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT, headers=auth, timeout=30)
            assert r.status_code == 200
            ids[r.headers["x-audit-trace-id"]] = name
        with admin(a_, keys) as a, admin(b_, keys) as b:
            # B's entries reach the shared index behind its writer (every half second).
            def logged(c):
                return {e["request_id"]: e["replica"] for e in
                        c.post("/v1/activity/logs", json={"action": "chat.completions", "limit": 100}).json()["data"]}
            harness.wait_for(lambda: logged(a) == ids, timeout=5, what="both replicas' entries on A")
            assert logged(b) == ids
            only_b = a.post("/v1/activity/logs", json={"replica": "replica-1", "action": "chat.completions"}).json()
            assert [e["request_id"] for e in only_b["data"]] == [k for k, v in ids.items() if v == "replica-1"]
            # Pages: one entry at a time, across replicas, in time order, nothing twice.
            seen, cursor = [], None
            while True:
                page = a.post("/v1/activity/logs", json={"action": "chat.completions", "limit": 1,
                                                         **({"cursor": cursor} if cursor else {})}).json()
                seen += [e["request_id"] for e in page["data"]]
                cursor = page["next_cursor"]
                if not cursor:
                    break
            assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
            # Unfiltered, each page read is itself an entry, copied to the index before the next
            # read: the walk still ends, bounded by its first page's time (issue 49).
            walked, cursor = [], None
            for _ in range(300):
                page = a.post("/v1/activity/logs", json={"limit": 1, **({"cursor": cursor} if cursor else {})}).json()
                walked += [(e["replica"], e["seq"]) for e in page["data"]]
                cursor = page["next_cursor"]
                if not cursor:
                    break
            assert cursor is None, f"the walk did not end after {len(walked)} pages"
            assert len(walked) == len(set(walked)) and set(ids.values()) <= {r for r, _ in walked}
            # Newest first, one at a time across replicas: the same chat entries, reversed.
            newest, cursor = [], None
            while True:
                page = a.post("/v1/activity/logs", json={"action": "chat.completions", "limit": 1, "order": "desc",
                                                         **({"cursor": cursor} if cursor else {})}).json()
                newest += [e["request_id"] for e in page["data"]]
                cursor = page["next_cursor"]
                if not cursor:
                    break
            assert newest == seen[::-1], (newest, seen)
            csv_text = a.post("/v1/activity/logs", json={"format": "csv", "replica": "replica-1"}).text
            assert csv_text.splitlines()[0].endswith(",replica") and "replica-1" in csv_text.splitlines()[1]
            # Verification: this replica's files, and every replica's indexed chain.
            report = b.get("/v1/admin/journal/verify").json()
            chains = {c["sovereign_id"]: c for c in report["replicas"]}
            assert report["ok"] and set(chains) == {"replica-0", "replica-1"}, report
            assert all(c["ok"] and c["entries"] >= 1 for c in chains.values()), chains
        # An entry altered in the shared index is found, named by replica and seq.
        import subprocess
        url = pg.database("journal")
        subprocess.run(["psql", url, "-q", "-c",
                        "UPDATE journal_entries SET line = replace(line, '\"status\":\"success\"', "
                        "'\"status\":\"error\"') WHERE replica = 'replica-1' AND seq = 1"], check=True)
        with admin(a_, keys) as a:
            report = a.get("/v1/admin/journal/verify").json()
        bad = {c["sovereign_id"]: c for c in report["replicas"]}["replica-1"]
        assert not report["ok"] and not bad["ok"] and bad["problem"]["seq"] == 1, report
    finally:
        stop_all(replicas)


def test_a_replica_whose_journal_was_lost_refuses_to_start_rather_than_stop_copying(sim, keys, pg,
                                                                                   redis_server, tmp_path):
    """The shared index already holds this replica's seqs: a new chain under the same id would
    never be copied (its seqs are taken), so start-up refuses with the reason."""
    (a_,) = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "lost", n=1)
    auth = {"Authorization": f"Bearer {keys['member']}"}
    try:
        for _ in range(3):
            r = httpx.post(f"{a_.url}/v1/chat/completions", json=CHAT, headers=auth, timeout=30)
            assert r.status_code == 200
        with admin(a_, keys) as a:
            harness.wait_for(lambda: len(a.post("/v1/activity/logs", json={
                "replica": "replica-0", "action": "chat.completions"}).json()["data"]) == 3,
                timeout=5, what="the entries copied into the shared index")
    finally:
        stop_all(replicas)
    import subprocess

    def psql(sql: str):
        subprocess.run(["psql", pg.database("lost"), "-q", "-c", sql], check=True)
    # The index's last entry of this chain is not this journal's: refused.
    last = "seq = (SELECT max(seq) FROM journal_entries WHERE replica = 'replica-0')"
    psql(f"UPDATE journal_entries SET line = line || ' ' WHERE replica = 'replica-0' AND {last}")
    with pytest.raises(RuntimeError) as refused:
        start_replicas(sim, keys, pg, redis_server, tmp_path, "lost", n=1)
    assert "holds a different entry at seq" in str(refused.value), str(refused.value)
    psql(f"UPDATE journal_entries SET line = rtrim(line, ' ') WHERE replica = 'replica-0' AND {last}")
    # Restarted on its own journal: it starts.
    again = start_replicas(sim, keys, pg, redis_server, tmp_path, "lost", n=1)[0]
    again.kill()
    for f in harness.journal_dir(tmp_path / "replica-0").glob("journal-*.jsonl"):
        f.unlink()
    with pytest.raises(RuntimeError) as refused:
        start_replicas(sim, keys, pg, redis_server, tmp_path, "lost", n=1)
    text = str(refused.value)
    assert "journal chain \"replica-0\"" in text and "this replica's journal ends at seq 0" in text, text
    assert "another replica runs with sovereign_id" in text, text


def test_without_redis_a_revocation_reaches_the_other_replica_within_the_key_cache_ttl(sim, keys, pg,
                                                                                      redis_server, tmp_path):
    """PostgreSQL alone (no notices between replicas): a cached key is re-read from the store
    after 5 s, so a revoked key stops on every replica within that bound."""
    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "noredis", redis=False)
    try:
        with admin(a_, keys) as a:
            key = new_key(a, new_team(a)["id"])
            auth = {"Authorization": f"Bearer {key['key']}"}
            assert httpx.get(f"{b_.url}/v1/models", headers=auth).status_code == 200
            assert a.post(f"/v1/admin/keys/{key['id']}/revoke").status_code == 200
        revoked = time.monotonic()
        harness.wait_for(lambda: httpx.get(f"{b_.url}/v1/models", headers=auth).status_code == 401,
                         timeout=10, interval=0.1, what="the revoked key refused on the other replica")
        assert time.monotonic() - revoked < 6.5
    finally:
        stop_all(replicas)


def test_any_replica_proves_any_replicas_entries_in_that_replicas_own_log(sim, keys, pg, redis_server,
                                                                          tmp_path):
    """Issue 48, replicas: each replica's chain is its own log (its own origin and key). An entry
    written by one replica is proved by either, against the head its writer signed and published."""
    import tlog_verify as tv

    a_, b_ = replicas = start_replicas(sim, keys, pg, redis_server, tmp_path, "tlog")
    auth = {"Authorization": f"Bearer {keys['member']}"}
    try:
        written = {}
        for gw in (a_, b_, b_, a_, b_):
            r = httpx.post(f"{gw.url}/v1/chat/completions", json=CHAT, headers=auth, timeout=30)
            assert r.status_code == 200
            written[r.headers["x-audit-trace-id"]] = gw
        with admin(a_, keys) as a, admin(b_, keys) as b:
            vkeys = {"replica-0": tv.parse_vkey(a.get("/v1/activity/checkpoint/key").text),
                     "replica-1": tv.parse_vkey(b.get("/v1/activity/checkpoint/key").text)}
            assert vkeys["replica-0"] != vkeys["replica-1"]
            # The other replica's key, as that replica published it.
            harness.wait_for(lambda: a.get("/v1/activity/checkpoint/key",
                                           params={"replica": "replica-1"}).status_code == 200,
                             timeout=10, what="replica-1's published head")
            assert tv.parse_vkey(a.get("/v1/activity/checkpoint/key",
                                       params={"replica": "replica-1"}).text) == vkeys["replica-1"]
            for rid, writer in written.items():
                own = "replica-0" if writer is a_ else "replica-1"
                harness.wait_for(lambda: a.post("/v1/activity/logs",
                                                 json={"format": "jsonl", "request_id": rid}).content,
                                 timeout=10, what="the entry in the shared index")
                line = a.post("/v1/activity/logs", json={"format": "jsonl", "request_id": rid}).content
                for reader in (a, b):
                    proof = reader.get("/v1/activity/proof", params={"request_id": rid})
                    assert proof.status_code == 200, proof.text
                    p = proof.json()
                    assert p.get("replica", own) == own
                    tv.verify_inclusion(line, p, p["checkpoint"], vkeys[own])
                    assert tv.verify_checkpoint(p["checkpoint"], vkeys[own]).origin.endswith("/" + own)
            # Consistency of replica-1's log, served by replica-0 from its mirror.
            old = a.get("/v1/activity/checkpoint", params={"replica": "replica-1"}).text
            for _ in range(3):
                assert httpx.post(f"{b_.url}/v1/chat/completions", json=CHAT, headers=auth,
                                  timeout=30).status_code == 200
            m = tv.verify_checkpoint(old, vkeys["replica-1"]).size
            new = harness.wait_for(
                lambda: (t := a.get("/v1/activity/checkpoint", params={"replica": "replica-1"}).text)
                and tv.verify_checkpoint(t, vkeys["replica-1"]).size >= m + 3 and t,
                timeout=10, what="a newer head of replica-1")
            n = tv.verify_checkpoint(new, vkeys["replica-1"]).size
            c = a.get("/v1/activity/consistency", params={"from": m, "to": n, "replica": "replica-1"})
            assert c.status_code == 200, c.text
            tv.verify_consistency(old, new, c.json(), vkeys["replica-1"])
            assert a.get("/v1/activity/checkpoint", params={"replica": "nobody"}).status_code == 404
    finally:
        stop_all(replicas)


def test_a_replica_killed_mid_ingestion_leaves_its_job_to_the_other(sim, keys, pg, redis_server, tmp_path):
    """Issue 44: replica A claims a long upload and is SIGKILLed mid-job; once its lease lapses
    (`[documents] ingest_lease_ms`, short here so the test does not wait long) replica B claims
    the job and completes it: the chunk count A's extraction reported, every chunk under the id
    its document and ordinal derive, searchable on both sides of the store."""
    from test_ingestion import Docs, chunks_by_ordinal, long_text, new_collection

    extra = "\n[documents]\ningest_lease_ms = 2000\nconcurrent_ingests = 1\n"
    [a_] = start_replicas(sim, keys, pg, redis_server, tmp_path, "takeover", n=1, extra=extra)
    b_ = None
    try:
        docs_a = Docs(a_, keys["member"])
        c = new_collection()
        r = docs_a.upload("long.txt", long_text(160, "takeover"), c)
        assert r.status_code == 202, r.text
        doc_id = r.json()["id"]
        # A (alone) claims it and gets through some of it.
        harness.wait_for(lambda: docs_a.get(doc_id)["progress"]["chunks_done"] > 0, timeout=180,
                         what="replica A embedding the first window")
        mid = docs_a.get(doc_id)
        assert mid["status"] == "in_progress" and mid["progress"]["chunks_done"] < mid["progress"]["chunks"], mid
        [b_] = start_replicas(sim, keys, pg, redis_server, tmp_path, "takeover", n=1, extra=extra, first=1)
        a_.kill()  # SIGKILL: the lease still names A, which will never renew it
        docs_b = Docs(b_, keys["member"])
        final = docs_b.poll(doc_id)[-1]
        assert final["status"] == "completed", final
        assert final["chunks"] == mid["progress"]["chunks"] == final["progress"]["chunks_done"], final
        cited = chunks_by_ordinal(docs_b, doc_id, c, final["chunks"])
        assert len(cited) >= 10, cited.keys()
    finally:
        stop_all([p for p in (a_, b_) if p is not None])
