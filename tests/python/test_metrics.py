"""Issue 19, `/metrics` through the real binary: known traffic (a success, a 401, a 429, a 451, a
blocked PII request, a fallback, a stream, an auto-routed request) moves exactly the labelled
counters and histogram counts it should, and nothing else. The exposition is parsed with the
Prometheus project's own Python parser, so a malformed line fails the test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import harness
from test_fallback import FALLBACKS

SETTINGS = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})
HI = [{"role": "user", "content": "hello there, a short question"}]

# The families whose every change the tests account for.
COUNTED = {
    "sovereign_http_requests_total",
    "sovereign_limit_refusals_total",
    "sovereign_budget_refusals_total",
    "sovereign_guardrail_actions_total",
    "sovereign_fallbacks_by_model_total",
    "sovereign_policy_swaps_total",
    "sovereign_request_duration_seconds_count",
    "sovereign_upstream_duration_seconds_count",
    "sovereign_gateway_overhead_seconds_count",
    "sovereign_time_to_first_token_seconds_count",
    "sovereign_policy_call_duration_seconds_count",
}


def scrape(gw) -> dict[tuple, float]:
    """Every sample: (name, sorted labels) → value."""
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


class Meter:
    """A scrape now; `delta()` is what changed since in the counted families (the scrapes' own
    `route="metrics"` series left out), keyed by (name, sorted labels)."""

    def __init__(self, gw):
        self.gw = gw
        self.before = scrape(gw)

    def delta(self) -> dict[tuple, float]:
        out = {}
        for (name, labels), v in scrape(self.gw).items():
            if name not in COUNTED or ("route", "metrics") in labels:
                continue
            d = v - self.before.get((name, labels), 0.0)
            if d:
                out[(name, labels)] = d
        return out

    def settled(self, must: tuple) -> dict[tuple, float]:
        """The delta once it holds `must` (a stream is counted when its body is done with)."""
        return harness.wait_for(lambda: d if must in (d := self.delta()) else None, what=str(must))


def req(route="chat.completions", team="t1", model="", routed="", policy="", status="2xx", error=""):
    labels = {"route": route, "team": team, "model": model, "routed_model": routed, "policy": policy,
              "status": status, "error_type": error}
    return ("sovereign_http_requests_total", tuple(sorted(labels.items())))


def hist(name, **labels):
    return (f"sovereign_{name}_count", tuple(sorted(labels.items())))


def counter(name, **labels):
    return (f"sovereign_{name}", tuple(sorted(labels.items())))


@pytest.fixture(scope="module")
def gw(sim, keys, tmp_path_factory):
    directory = tmp_path_factory.mktemp("metrics")
    doc = directory / "routing.yaml"
    doc.write_text("name: metrics-test\nroutes: []\ndefault: llama-3.2-3b-instruct\n")
    models = []
    for m in harness.fleet_models(sim.url, first_byte_timeout_ms=2000):
        if m["id"] in FALLBACKS:
            m["fallbacks"] = FALLBACKS[m["id"]]
        models.append(m)
    config = harness.gateway_config(
        models, keys["config"], routing={"document": str(doc)}, journal={"enabled": True},
        extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\n")
    p = harness.start_gateway(config, directory)
    yield p
    p.kill()


def post(gw, secret, **body):
    return httpx.post(f"{gw.url}/v1/chat/completions", headers={"Authorization": f"Bearer {secret}"},
                      json={"messages": HI, **body}, timeout=30)


def admin(gw, keys) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=30)


def test_a_success_counts_the_request_its_times_its_tokens_and_its_spend(gw, keys):
    m = Meter(gw)
    before = scrape(gw)
    r = post(gw, keys["member"], model="jais-30b-chat")
    assert r.status_code == 200, r.text
    assert m.delta() == {
        req(model="jais-30b-chat", routed="jais-30b-chat", policy="explicit-model"): 1,
        hist("request_duration_seconds", route="chat.completions", routed_model="jais-30b-chat"): 1,
        hist("upstream_duration_seconds", routed_model="jais-30b-chat"): 1,
        hist("gateway_overhead_seconds", route="chat.completions"): 1,
        hist("policy_call_duration_seconds", kind="guardrail_input"): 1,
        hist("policy_call_duration_seconds", kind="guardrail_output"): 1,
    }
    after = scrape(gw)
    usage = r.json()["usage"]
    tokens = lambda s, d: s.get(("sovereign_tokens_total", (("direction", d), ("routed_model", "jais-30b-chat"),
                                                            ("team", "t1"))), 0)
    assert tokens(after, "in") - tokens(before, "in") == usage["prompt_tokens"]
    assert tokens(after, "out") - tokens(before, "out") == usage["completion_tokens"]
    spend = lambda s: s.get(("sovereign_spend_usd_total", (("routed_model", "jais-30b-chat"), ("team", "t1"))), 0)
    want = (usage["prompt_tokens"] * 0.6 + usage["completion_tokens"] * 1.8) / 1e6
    assert spend(after) - spend(before) == pytest.approx(want, abs=2e-6)
    # The overhead is the total minus the upstream's share: never more than the total.
    total = after[("sovereign_request_duration_seconds_sum", (("route", "chat.completions"),
                                                               ("routed_model", "jais-30b-chat")))]
    overhead = after[("sovereign_gateway_overhead_seconds_sum", (("route", "chat.completions"),))]
    assert 0 < overhead <= total


def test_refusals_are_counted_by_status_error_type_and_limit(gw, keys):
    with admin(gw, keys) as a:
        team = a.post("/v1/admin/teams", json={"name": "m", "plan": "enterprise",
                                                 "allowed_regions": ["sa-riyadh-1"]}).json()
        key = a.post("/v1/admin/keys", json={"team_id": team["id"], "role": "member", "rpm": 1}).json()["key"]
    m = Meter(gw)
    # 401: no team.
    assert post(gw, "sk-sov-not-a-key", model="jais-30b-chat").status_code == 401
    # 451: the team may only use Riyadh; the model asked for is in Paris.
    r = post(gw, key, model="magistral-small")
    assert r.status_code == 451, r.text
    # 429: the key's one request a minute is spent.
    r = post(gw, key, model="jais-30b-chat")
    assert r.status_code == 429, r.text
    tid = team["id"]
    assert m.delta() == {
        req(team="", status="4xx", error="authentication_error"): 1,
        req(team=tid, model="magistral-small", status="4xx", error="sovereignty_error"): 1,
        req(team=tid, status="4xx", error="rate_limit_exceeded"): 1,
        counter("limit_refusals_total", limit="rpm", team=tid): 1,
        hist("request_duration_seconds", route="chat.completions", routed_model=""): 3,
        hist("policy_call_duration_seconds", kind="guardrail_input"): 1,
    }


def test_a_blocked_request_counts_the_guardrail_action(gw, keys, sim):
    m = Meter(gw)
    r = httpx.post(f"{gw.url}/v1/chat/completions", headers={"Authorization": f"Bearer {keys['member']}"},
                   json={"model": "jais-30b-chat",
                         "messages": [{"role": "user", "content": "my card is 4111 1111 1111 1111"}]}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["type"] == "guardrail_violation"
    assert m.delta() == {
        req(status="4xx", error="guardrail_violation"): 1,
        counter("guardrail_actions_total", action="blocked", stage="input"): 1,
        hist("request_duration_seconds", route="chat.completions", routed_model=""): 1,
        hist("policy_call_duration_seconds", kind="guardrail_input"): 1,
    }


def test_a_fallback_names_both_models(gw, keys, sim):
    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error500")
    m = Meter(gw)
    r = post(gw, keys["member"], model="qwen2.5-coder-32b")
    assert r.status_code == 200 and r.json()["model"] == "magistral-small", r.text
    assert m.delta() == {
        req(model="qwen2.5-coder-32b", routed="magistral-small", policy="explicit-model"): 1,
        counter("fallbacks_by_model_total", **{"from": "qwen2.5-coder-32b", "to": "magistral-small"}): 1,
        hist("request_duration_seconds", route="chat.completions", routed_model="magistral-small"): 1,
        hist("upstream_duration_seconds", routed_model="magistral-small"): 1,
        hist("gateway_overhead_seconds", route="chat.completions"): 1,
        hist("policy_call_duration_seconds", kind="guardrail_input"): 1,
        hist("policy_call_duration_seconds", kind="guardrail_output"): 1,
    }


def test_a_stream_counts_its_first_token_and_ends_as_one_request(gw, keys):
    m = Meter(gw)
    with httpx.stream("POST", f"{gw.url}/v1/chat/completions",
                      headers={"Authorization": f"Bearer {keys['member']}"},
                      json={"model": "jais-30b-chat", "stream": True, "messages": HI}, timeout=30) as r:
        assert r.status_code == 200
        assert any(line == "data: [DONE]" for line in r.iter_lines())
    delta = m.settled(req(model="jais-30b-chat", routed="jais-30b-chat", policy="explicit-model"))
    guard_calls = delta.pop(hist("policy_call_duration_seconds", kind="guardrail_output"))
    assert guard_calls >= 1  # the output stage runs once per held-back window
    assert delta == {
        req(model="jais-30b-chat", routed="jais-30b-chat", policy="explicit-model"): 1,
        hist("request_duration_seconds", route="chat.completions", routed_model="jais-30b-chat"): 1,
        hist("upstream_duration_seconds", routed_model="jais-30b-chat"): 1,
        hist("time_to_first_token_seconds", routed_model="jais-30b-chat"): 1,
        hist("policy_call_duration_seconds", kind="guardrail_input"): 1,
    }


def test_an_auto_routed_request_counts_the_router_call_and_its_policy(gw, keys):
    m = Meter(gw)
    r = post(gw, keys["member"], model="auto-router")
    assert r.status_code == 200, r.text
    routed = r.json()["model"]
    policy = r.headers["x-route-policy"]
    assert m.delta() == {
        req(model="auto-router", routed=routed, policy=policy): 1,
        hist("request_duration_seconds", route="chat.completions", routed_model=routed): 1,
        hist("upstream_duration_seconds", routed_model=routed): 1,
        hist("gateway_overhead_seconds", route="chat.completions"): 1,
        hist("policy_call_duration_seconds", kind="router"): 1,
        hist("policy_call_duration_seconds", kind="guardrail_input"): 1,
        hist("policy_call_duration_seconds", kind="guardrail_output"): 1,
    }


def test_upstream_health_and_label_values_stay_bounded(gw, keys):
    samples = scrape(gw)
    up = {dict(l)["model"]: v for (n, l), v in samples.items() if n == "sovereign_upstream_up"}
    assert set(up) == {m["id"] for m in harness.FLEET}
    # A client-chosen model name that does not exist never becomes a label value.
    r = post(gw, keys["member"], model="no-such-model-" + "x" * 40)
    assert r.status_code == 404
    assert not any("no-such-model" in v for (_, l) in scrape(gw) for _, v in l)


ROOT = Path(__file__).resolve().parents[2]


def test_every_series_is_documented_and_the_dashboard_queries_only_documented_ones(gw):
    doc = (ROOT / "docs" / "OPERATIONS.md").read_text()
    documented = set(re.findall(r"`(sovereign_[a-z_]+)`", doc))
    base = lambda n: re.sub(r"_(bucket|sum|count)$", "", n)
    exposed = {base(n) for (n, _) in scrape(gw) if n.startswith("sovereign_")}
    others = {n for n in exposed if n.startswith(("sovereign_tls_", "sovereign_shared_"))}  # TLS.md, SCALE-OUT.md
    assert exposed - others <= documented, sorted(exposed - others - documented)
    dash = json.loads((ROOT / "deploy" / "grafana" / "sovereign-gateway.json").read_text())
    used = {base(m) for p in dash["panels"] for t in p["targets"]
            for m in re.findall(r"sovereign_[a-z_]+", t["expr"])}
    assert len(used) >= 10 and used <= documented, sorted(used - documented)
