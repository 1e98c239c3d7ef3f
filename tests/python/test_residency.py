"""Issue 6, the residency guard through the real binary: the serving model's region must be in
the team's allowed regions, sensitive requests stay on local models, nothing overrides it, and
when no model complies the answer is 451 `sovereignty_error`."""

from __future__ import annotations

import httpx
import openai
import pytest

import harness

ASK = {"messages": [{"role": "user", "content": "hello there, a short question"}]}


def admin(gw, keys) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=30)


def member_of(gw, keys, **team) -> str:
    with admin(gw, keys) as a:
        t = a.post("/v1/admin/teams", json={"name": "r", "plan": "enterprise", **team})
        assert t.status_code == 201, t.text
        k = a.post("/v1/admin/keys", json={"team_id": t.json()["id"], "role": "member"})
        assert k.status_code == 201, k.text
        return k.json()["key"]


@pytest.fixture
def routed(sim, gateway_factory, tmp_path):
    # Routing sends short English prompts to the small local model and everything else to the
    # default (a cloud model in Frankfurt) — so the guard has something to move.
    doc = tmp_path / "routing.yaml"
    doc.write_text("name: residency-test\nroutes:\n  - name: french\n    condition: \"language == 'fr'\"\n"
                   "    model: magistral-small\ndefault: qwen2.5-coder-32b\n")
    return gateway_factory(harness.fleet_models(sim.url), routing={"document": str(doc)},
                           default_model="qwen2.5-coder-32b")


def test_explicit_model_outside_the_allowed_regions_is_451(routed, keys):
    secret = member_of(routed, keys, allowed_regions=["sa-riyadh-1"])
    with httpx.Client(base_url=routed.url, headers={"Authorization": f"Bearer {secret}"}) as c:
        r = c.post("/v1/chat/completions", json={"model": "magistral-small", **ASK})
        assert r.status_code == 451, r.text
        err = r.json()["error"]
        assert err["type"] == "sovereignty_error" and err["code"] == "region_not_allowed"
        assert "eu-paris-1" in err["message"]
        ok = c.post("/v1/chat/completions", json={"model": "jais-30b-chat", **ASK})
        assert ok.status_code == 200 and ok.headers["x-data-residency"] == "sa-riyadh-1"
        # auto-router: the rules would pick a cloud model; only Riyadh models are offered.
        auto = c.post("/v1/chat/completions", json={"model": "auto-router", **ASK})
        assert auto.status_code == 200, auto.text
        assert auto.headers["x-data-residency"] == "sa-riyadh-1"
    sdk = openai.OpenAI(base_url=f"{routed.url}/v1", api_key=secret, max_retries=0)
    with pytest.raises(openai.APIStatusError) as e:
        sdk.chat.completions.create(model="qwen2.5-coder-32b", **ASK)
    assert e.value.status_code == 451


def test_sensitive_requests_stay_on_local_models(routed, keys):
    secret = member_of(routed, keys)
    with httpx.Client(base_url=routed.url, headers={"Authorization": f"Bearer {secret}"}) as c:
        sensitive = {"X-Data-Classification": "sensitive"}
        r = c.post("/v1/chat/completions", json={"model": "auto-router", **ASK}, headers=sensitive)
        assert r.status_code == 200, r.text
        model = r.json()["model"]
        local = {m["id"] for m in harness.FLEET if m["local"] and m["kind"] == "chat"}
        assert model in local, model
        # The body field works the same way.
        r = c.post("/v1/chat/completions",
                   json={"model": "auto-router", "routing": {"classification": "sensitive"}, **ASK})
        assert r.status_code == 200 and r.json()["model"] in local
        # Naming a cloud model does not get around it.
        r = c.post("/v1/chat/completions", json={"model": "qwen2.5-coder-32b", **ASK}, headers=sensitive)
        assert r.status_code == 451 and r.json()["error"]["code"] == "sensitive_requires_local"
        # Unclassified, the rules' cloud choice stands.
        r = c.post("/v1/chat/completions", json={"model": "auto-router", **ASK})
        assert r.status_code == 200 and r.json()["model"] == "qwen2.5-coder-32b"


def test_sensitive_with_only_cloud_models_allowed_is_451(routed, keys):
    secret = member_of(routed, keys, allowed_regions=["eu-frankfurt-1", "eu-paris-1"])
    with httpx.Client(base_url=routed.url, headers={"Authorization": f"Bearer {secret}"}) as c:
        r = c.post("/v1/chat/completions", json={"model": "auto-router", **ASK},
                   headers={"X-Data-Classification": "sensitive"})
        assert r.status_code == 451, r.text
        assert r.json()["error"]["type"] == "sovereignty_error"
        assert r.json()["error"]["code"] == "no_compliant_model"
        # Embeddings are guarded too.
        r = c.post("/v1/embeddings", json={"model": "multilingual-e5-small", "input": "x"})
        assert r.status_code == 451 and r.json()["error"]["code"] == "region_not_allowed"


def test_a_sensitive_only_team_stays_local_without_asking(routed, keys):
    secret = member_of(routed, keys, sensitive_only=True)
    with httpx.Client(base_url=routed.url, headers={"Authorization": f"Bearer {secret}"}) as c:
        r = c.post("/v1/chat/completions", json={"model": "auto-router", **ASK})
        assert r.status_code == 200, r.text
        local = {m["id"] for m in harness.FLEET if m["local"]}
        assert r.json()["model"] in local
        r = c.post("/v1/chat/completions", json={"model": "magistral-small", **ASK})
        assert r.status_code == 451 and r.json()["error"]["code"] == "sensitive_requires_local"


def test_a_team_forbidden_a_model_gets_403(routed, keys):
    secret = member_of(routed, keys, allowed_models=["jais-30b-chat", "multilingual-e5-small"])
    with httpx.Client(base_url=routed.url, headers={"Authorization": f"Bearer {secret}"}) as c:
        r = c.post("/v1/chat/completions", json={"model": "magistral-small", **ASK})
        assert r.status_code == 403, r.text
        assert r.json()["error"]["type"] == "permission_error"
        assert r.json()["error"]["code"] == "model_not_allowed"
        # The router only sees the team's models.
        r = c.post("/v1/chat/completions", json={"model": "auto-router", **ASK})
        assert r.status_code == 200 and r.json()["model"] == "jais-30b-chat"
        assert c.post("/v1/embeddings", json={"model": "multilingual-e5-small", "input": "x"}).status_code == 200
