"""`/v1/models` and `/v1/embeddings` through the official SDK."""

from __future__ import annotations

import math
import uuid

import openai
import pytest

import harness

EMBEDDING_MODEL = "multilingual-e5-small"
DIMENSIONS = 384


BUILTIN = "multilingual-e5-small-q4"


def test_models_list_has_the_fleet_and_auto_router(client):
    models = {m.id: m.to_dict() for m in client.models.list()}
    # The document library's embedding model is served in process (scripts/setup-models installs it).
    assert set(models) == {m["id"] for m in harness.FLEET} | {"auto-router", BUILTIN}
    for expected in harness.FLEET:
        m = models[expected["id"]]
        assert m["object"] == "model"
        assert m["owned_by"] == "test-gw-1"
        assert isinstance(m["created"], int) and m["created"] > 0
        for field in ("family", "kind", "region", "local"):
            assert m[field] == expected[field], (expected["id"], field)
        assert set(expected["languages"]) <= set(m["languages"])
    auto = models["auto-router"]
    assert auto["kind"] == "chat" and auto["family"] == "router"
    assert {"languages", "region", "local"} <= set(auto)
    builtin = models[BUILTIN]
    assert (builtin["kind"], builtin["local"], builtin["dimensions"]) == ("embedding", True, 384)
    assert builtin["region"] == "sa-riyadh-1"


def test_models_list_preserves_config_order(client):
    ids = [m.id for m in client.models.list()]
    assert ids == [m["id"] for m in harness.FLEET] + ["auto-router", BUILTIN]


def test_retrieve_one_model(client):
    m = client.models.retrieve("jais-30b-chat")
    assert m.id == "jais-30b-chat"
    d = m.to_dict()
    assert (d["family"], d["kind"], d["region"], d["local"]) == ("jais", "chat", "sa-riyadh-1", True)
    assert d["languages"] == ["ar", "en"]
    assert client.models.retrieve("auto-router").id == "auto-router"


def test_retrieve_unknown_model_is_not_found(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("gpt-17-ultra")
    assert e.value.status_code == 404
    assert e.value.code == "model_not_found"
    assert "gpt-17-ultra" in e.value.body["message"]


def _float_vectors(resp):
    return [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]


def test_embeddings_single_string_default_base64(client, sim):
    marker = f"the quick brown fox {uuid.uuid4().hex}"
    raw = client.embeddings.with_raw_response.create(model=EMBEDDING_MODEL, input=marker)
    resp = raw.parse()
    assert resp.model == EMBEDDING_MODEL
    assert raw.headers["x-data-residency"] == "sa-riyadh-1"
    assert raw.headers["x-audit-trace-id"].startswith("req-")
    assert len(resp.data) == 1 and resp.data[0].index == 0
    vec = resp.data[0].embedding
    assert len(vec) == DIMENSIONS and all(isinstance(x, float) for x in vec)
    assert any(x != 0 for x in vec)
    assert resp.usage.prompt_tokens == 5
    # The SDK asks for base64 by default; the gateway passes that on.
    upstream = [r for r in harness.sim_requests(sim) if r["body"].get("input") == marker]
    assert len(upstream) == 1
    assert upstream[0]["path"] == "/v1/embeddings"
    assert upstream[0]["body"] == {"model": EMBEDDING_MODEL, "input": marker, "encoding_format": "base64"}


def test_embeddings_list_input_float_matches_base64(client):
    texts = ["مرحبا بالعالم", "hello world", "bonjour le monde"]
    as_float = client.embeddings.create(model=EMBEDDING_MODEL, input=texts, encoding_format="float")
    as_base64 = client.embeddings.create(model=EMBEDDING_MODEL, input=texts)
    assert as_float.model == as_base64.model == EMBEDDING_MODEL
    assert [d.index for d in as_float.data] == [0, 1, 2]
    floats, decoded = _float_vectors(as_float), _float_vectors(as_base64)
    assert [len(v) for v in floats] == [DIMENSIONS] * 3
    for a, b in zip(floats, decoded):
        assert all(math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-7) for x, y in zip(a, b))
    assert floats[0] != floats[1] != floats[2]


def test_embeddings_are_deterministic(client):
    a = client.embeddings.create(model=EMBEDDING_MODEL, input="same text", encoding_format="float")
    b = client.embeddings.create(model=EMBEDDING_MODEL, input=["same text"], encoding_format="float")
    assert a.data[0].embedding == b.data[0].embedding


def test_chat_model_used_for_embeddings_is_bad_request(client, sim):
    before = harness.sim_stats(sim)["requests"]
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="jais-30b-chat", input="hello")
    assert e.value.status_code == 400
    assert e.value.body["param"] == "model"
    assert "jais-30b-chat" in e.value.body["message"] and "embedding" in e.value.body["message"]
    assert harness.sim_stats(sim)["requests"] == before


def test_auto_router_used_for_embeddings_is_bad_request(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="auto-router", input="hello")
    assert "auto-router" in e.value.body["message"]


def test_embedding_model_used_for_chat_is_bad_request(client, sim):
    before = harness.sim_stats(sim)["requests"]
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=EMBEDDING_MODEL, messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 400
    assert e.value.body["param"] == "model"
    assert EMBEDDING_MODEL in e.value.body["message"] and "chat" in e.value.body["message"]
    assert harness.sim_stats(sim)["requests"] == before


def test_unknown_embedding_model_is_not_found(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.embeddings.create(model="no-such-embedder", input="hello")
    assert e.value.code == "model_not_found"
