"""The retrieval policy world (issue 50 item 3; docs/POLICIES.md "Retrieval policies") through the
real binary: a Wasm policy installed with `POST /v1/admin/retrieval-policy` sees the caller, the
query and the ranked candidates with their documents' metadata, and filters and re-ranks them.

The guest is `examples/rust-retrieval` (built with the policies workspace): a document whose
metadata `classification` is above the caller's clearance never leaves — not in `/v1/rag/query`'s
citations, not in a vector store's search results, not in the sources sent to the model for
`generate` — and the journal entry says how many chunks were removed; `newest_first` puts the
highest `version` first. The clearance comes from the policy's settings, by certificate identity,
key, team or role (the example's documented order). A swap under traffic drops no request."""

from __future__ import annotations

import base64
import json
import threading
import uuid

import httpx
import pytest

import harness

RELEASE = harness.REPO / "policies" / "target" / "wasm32-wasip2" / "release"
CLEARANCE_WASM = RELEASE / "rust_retrieval.wasm"
KEEP_WASM = RELEASE / "retrieval_keep.wasm"
TOOL_WASM = RELEASE / "tool_allow.wasm"

SECRET = "The Project Falcon acquisition price is four point two billion riyals, approved by the board."
CONFIDENTIAL = "Project Falcon due diligence on the acquisition is led by the legal team in Riyadh."
PUBLIC = "The staff cafeteria opens at eight in the morning and closes at four in the afternoon."
QUESTION = "What is the Project Falcon acquisition price?"


@pytest.fixture(scope="module")
def keys():
    names = {"admin": ("admin", "t1"), "member": ("member", "t1"), "cleared": ("member", "t1")}
    secrets, config = {}, {}
    for name, (role, team) in names.items():
        secret, hash_ = harness.new_key()
        secrets[name] = secret
        config[name] = (role, hash_, team)
    return secrets, config


@pytest.fixture(scope="module")
def gw(sim, keys, tmp_path_factory):
    for path in (CLEARANCE_WASM, KEEP_WASM, TOOL_WASM):
        assert path.exists(), f"{path} is missing: `cargo build` builds the policies workspace"
    directory = tmp_path_factory.mktemp("retrieval-policy")
    config = harness.gateway_config(harness.fleet_models(sim.url), keys[1])
    p = harness.start_gateway(config, directory)
    yield p
    p.kill()


@pytest.fixture(scope="module")
def http(gw, keys):
    clients = {name: httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {secret}"}, timeout=120)
               for name, secret in keys[0].items()}
    yield clients
    for c in clients.values():
        c.close()


@pytest.fixture(scope="module")
def library(http):
    """One collection with a secret, a confidential and a public document: (collection, ids by level)."""
    collection = "c-" + uuid.uuid4().hex[:12]
    ids = {}
    for level, text in (("secret", SECRET), ("confidential", CONFIDENTIAL), ("public", PUBLIC)):
        r = http["admin"].post("/v1/documents/upload?wait=true", data={
            "collection": collection, "metadata": json.dumps({"classification": level})},
            files={"file": (f"{level}.txt", text.encode(), "text/plain")})
        assert r.status_code == 201, r.text
        ids[level] = r.json()["id"]
    return collection, ids


def key_id(http, name: str) -> str:
    r = http["admin"].get("/v1/admin/keys", params={"limit": 100})
    assert r.status_code == 200, r.text
    [k] = [k for k in r.json()["data"] if k.get("name") == name]
    return k["id"]


def install(http, component=None, settings=None) -> dict:
    body = {}
    if component is not None:
        body["component_base64"] = base64.b64encode(component.read_bytes()).decode()
    if settings is not None:
        body["settings"] = settings
    r = http["admin"].post("/v1/admin/retrieval-policy", json=body)
    assert r.status_code == 200, r.text
    info = r.json()
    assert info["object"] == "retrieval_policy"
    assert info["world"] == "sovereign:policy/retrieval-policy@0.1.0"
    return info


def clearance_settings(http, **extra) -> dict:
    return {"clearance": {"role:admin": "secret", f"key:{key_id(http, 'cleared')}": "confidential"},
            "default": "public", **extra}


def cited(r: httpx.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [c["document_id"] for c in r.json()["citations"]]


def entry(http, r: httpx.Response) -> dict:
    request_id = r.headers["x-audit-trace-id"]

    def found():
        got = http["admin"].post("/v1/activity/logs", json={"request_id": request_id})
        data = got.json().get("data") if got.status_code == 200 else None
        return data[0] if data else None
    return harness.wait_for(found, what="the journal entry")


def test_the_builtin_policy_changes_nothing(http, library):
    collection, ids = library
    info = http["admin"].get("/v1/admin/retrieval-policy").json()
    assert info["builtin"] is True
    r = http["member"].post("/v1/rag/query", json={"query": QUESTION, "collection": collection})
    assert set(cited(r)) == set(ids.values())
    assert "retrieval_filtered" not in entry(http, r)


def test_a_document_above_the_callers_clearance_is_never_cited(http, library):
    collection, ids = library
    info = install(http, CLEARANCE_WASM, clearance_settings(http))
    assert info["builtin"] is False
    # Unfiltered, the secret document is what this question ranks first.
    r = http["admin"].post("/v1/rag/query", json={"query": QUESTION, "collection": collection})
    assert cited(r)[0] == ids["secret"], r.json()
    assert "retrieval_filtered" not in entry(http, r)

    r = http["member"].post("/v1/rag/query", json={"query": QUESTION, "collection": collection})
    assert cited(r) == [ids["public"]]
    assert "four point two" not in r.text and "due diligence" not in r.text
    assert entry(http, r)["retrieval_filtered"] == 2

    r = http["cleared"].post("/v1/rag/query", json={"query": QUESTION, "collection": collection})
    assert ids["secret"] not in cited(r)
    assert ids["confidential"] in cited(r)
    assert entry(http, r)["retrieval_filtered"] == 1


def test_filtered_chunks_are_never_sent_to_generation(sim, http, library):
    collection, ids = library
    install(http, CLEARANCE_WASM, clearance_settings(http))
    before = harness.sim_stats(sim)["requests"]
    r = http["member"].post("/v1/rag/query", json={"query": QUESTION, "collection": collection,
                                                     "generate": True})
    assert r.status_code == 200, r.text
    assert cited(r) == [ids["public"]]
    sent = json.dumps(harness.sim_requests_since(sim, before))
    assert "cafeteria" in sent, "the public source went to the model"
    assert "four point two" not in sent and "due diligence" not in sent
    assert entry(http, r)["retrieval_filtered"] == 2


def test_a_vector_store_search_never_returns_a_filtered_document(http):
    install(http, CLEARANCE_WASM, clearance_settings(http))
    admin = http["admin"]
    file_ids = {}
    for level, text in (("secret", SECRET), ("public", PUBLIC)):
        r = admin.post("/v1/files", data={"purpose": "assistants"},
                       files={"file": (f"{level}.txt", text.encode(), "text/plain")})
        assert r.status_code in (200, 201), r.text
        file_ids[level] = r.json()["id"]
    r = admin.post("/v1/vector_stores", json={"name": "falcon"})
    assert r.status_code in (200, 201), r.text
    store = r.json()["id"]
    for level, fid in file_ids.items():
        r = admin.post(f"/v1/vector_stores/{store}/files",
                       json={"file_id": fid, "attributes": {"classification": level}})
        assert r.status_code in (200, 201), r.text

    def searched(who):
        r = http[who].post(f"/v1/vector_stores/{store}/search", json={"query": QUESTION})
        assert r.status_code == 200, r.text
        return [d["file_id"] for d in r.json()["data"]]
    # Attaching answers at once and indexes through the queue: wait until both files are searchable,
    # not only the one the admin check looks for, or the member's search races the public file.
    def both_completed():
        counts = admin.get(f"/v1/vector_stores/{store}").json()["file_counts"]
        return counts["completed"] == 2
    harness.wait_for(both_completed, timeout=60, what="the store's files indexed")
    assert file_ids["secret"] in searched("admin")
    assert file_ids["secret"] not in searched("member")
    assert file_ids["public"] in searched("member")


def test_a_reranking_policy_changes_the_order(http):
    collection = "c-" + uuid.uuid4().hex[:12]
    ids = {}
    for version, text in (("1", "Annual leave: employees get twenty one days of annual leave per year."),
                          ("2", "Handbook update: the leave allowance table was revised this year.")):
        r = http["admin"].post("/v1/documents/upload?wait=true", data={
            "collection": collection, "metadata": json.dumps({"version": version})},
            files={"file": (f"leave-v{version}.txt", text.encode(), "text/plain")})
        assert r.status_code == 201, r.text
        ids[version] = r.json()["id"]
    question = "How many days of annual leave do employees get per year?"
    install(http, CLEARANCE_WASM, {"default": "secret"})
    r = http["member"].post("/v1/rag/query", json={"query": question, "collection": collection})
    assert cited(r) == [ids["1"], ids["2"]], "the ranking alone puts version 1 first"
    install(http, settings={"default": "secret", "newest_first": "version"})
    r = http["member"].post("/v1/rag/query", json={"query": question, "collection": collection})
    assert cited(r) == [ids["2"], ids["1"]]
    assert "retrieval_filtered" not in entry(http, r)


def test_a_swap_under_traffic_drops_no_query(http, library):
    collection, ids = library
    install(http, CLEARANCE_WASM, {"default": "public"})
    stop = threading.Event()
    outcomes: list[tuple[int, list[str]]] = []
    errors: list[BaseException] = []

    def traffic():
        with httpx.Client(base_url=str(http["member"].base_url), headers=dict(http["member"].headers),
                          timeout=120) as c:
            while not stop.is_set():
                try:
                    r = c.post("/v1/rag/query", json={"query": QUESTION, "collection": collection})
                    outcomes.append((r.status_code, [x["document_id"] for x in r.json().get("citations", [])]))
                except BaseException as e:  # noqa: BLE001 (reported below)
                    errors.append(e)
    threads = [threading.Thread(target=traffic) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(6):
            install(http, settings={"default": "secret" if i % 2 == 0 else "public"})
        harness.wait_for(lambda: len(outcomes) >= 12, timeout=60, what="queries during the swaps")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert all(status == 200 for status, _ in outcomes), [s for s, _ in outcomes if s != 200]
    # Each answer is one version's: the secret document with its confidential sibling, or neither.
    for _, docs in outcomes:
        assert (ids["secret"] in docs) == (ids["confidential"] in docs), docs


def test_bad_uploads_are_400_and_change_nothing(http, library):
    collection, ids = library
    install(http, CLEARANCE_WASM, {"default": "public"})
    before = http["admin"].get("/v1/admin/retrieval-policy").json()
    for body in ({"component_base64": base64.b64encode(TOOL_WASM.read_bytes()).decode()},
                 {"component_base64": base64.b64encode(b"not wasm").decode()},
                 {"settings": "{not json"},
                 {},
                 {"component": "x"}):
        r = http["admin"].post("/v1/admin/retrieval-policy", json=body)
        assert r.status_code == 400, (body, r.text)
        assert set(r.json()["error"]) >= {"message", "type", "param", "code"}
    assert http["admin"].get("/v1/admin/retrieval-policy").json() == before
    r = http["member"].post("/v1/admin/retrieval-policy", json={"settings": {}})
    assert r.status_code == 403
    r = http["member"].post("/v1/rag/query", json={"query": QUESTION, "collection": collection})
    assert cited(r) == [ids["public"]]


def test_an_installed_policy_survives_a_restart(sim, keys, tmp_path):
    """The gateway never falls back to the built-in (keep everything) policy on its own: the
    installed one is kept in the data directory and active again after a restart."""
    config = harness.gateway_config(harness.fleet_models(sim.url), keys[1])
    p = harness.start_gateway(config, tmp_path)
    headers = {"Authorization": f"Bearer {keys[0]['admin']}"}
    try:
        with httpx.Client(base_url=p.url, headers=headers, timeout=120) as admin:
            collection = "c-" + uuid.uuid4().hex[:12]
            ids = {}
            for level, text in (("secret", SECRET), ("public", PUBLIC)):
                r = admin.post("/v1/documents/upload?wait=true", data={
                    "collection": collection, "metadata": json.dumps({"classification": level})},
                    files={"file": (f"{level}.txt", text.encode(), "text/plain")})
                assert r.status_code == 201, r.text
                ids[level] = r.json()["id"]
            r = admin.post("/v1/admin/retrieval-policy", json={
                "component_base64": base64.b64encode(CLEARANCE_WASM.read_bytes()).decode(),
                "settings": {"default": "public"}})
            assert r.status_code == 200, r.text
            installed = r.json()
    finally:
        p.stop()
    p = harness.start_gateway(config, tmp_path)
    try:
        with httpx.Client(base_url=p.url, headers=headers, timeout=120) as admin, \
                httpx.Client(base_url=p.url, headers={"Authorization": f"Bearer {keys[0]['member']}"},
                             timeout=120) as member:
            assert admin.get("/v1/admin/retrieval-policy").json() == installed
            r = member.post("/v1/rag/query", json={"query": QUESTION, "collection": collection})
            assert cited(r) == [ids["public"]]
    finally:
        p.kill()
