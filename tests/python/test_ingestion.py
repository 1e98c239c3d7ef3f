"""Asynchronous ingestion (issue 44, item 2) through the real binary: `POST /v1/documents/upload`
answers at once with the document `in_progress` (202, `openai-poll-after-ms`), `GET
/v1/documents/{id}` shows its progress moving and its end (`completed`, `failed` with
`last_error` in the error shape, `cancelled`); only completed documents are searched or listed;
`?wait=true` answers as the synchronous upload did; a re-upload while queued is the same
document; `POST /v1/documents/{id}/cancel`; a failing document leaves others alone; and the
queue is fair across teams (a one-page upload of team B is not queued behind team A's long
ones). docs/DOCUMENTS.md, "Asynchronous ingestion"."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import harness

ERROR_FIELDS = {"message", "type", "param", "code"}
DEADLINE_S = 240.0


def new_collection() -> str:
    return "c-" + uuid.uuid4().hex[:16]


def long_text(paragraphs: int, tag: str = "") -> bytes:
    """Plain text of many ≈ 400-token chunks, each paragraph about its own topic."""
    topics = ["harbour cranes", "orchard irrigation", "railway signalling", "bakery ovens",
              "library lending", "glacier monitoring", "beehive inspection", "tram maintenance"]
    out = []
    for i in range(paragraphs):
        topic = topics[i % len(topics)]
        sentences = [f"Section {i + 1} {tag} explains {topic} in detail."]
        sentences += [f"Step {j + 1} of the {topic} routine requires checking gauge {i * 10 + j} "
                      f"and writing its reading into the {topic} register before the shift ends."
                      for j in range(8)]
        out.append(" ".join(sentences))
    return ("\n\n".join(out) + "\n").encode()


class Docs:
    def __init__(self, gw: harness.Proc, key: str):
        self.http = httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {key}"}, timeout=330)

    def upload(self, filename: str, data: bytes, collection: str, wait: bool = False,
               ctype: str = "text/plain") -> httpx.Response:
        return self.http.post("/v1/documents/upload", params={"wait": "true"} if wait else None,
                              files={"file": (filename, data, ctype)}, data={"collection": collection})

    def get(self, doc_id: str) -> dict:
        r = self.http.get(f"/v1/documents/{doc_id}")
        assert r.status_code == 200, r.text
        return r.json()

    def poll(self, doc_id: str, deadline: float = DEADLINE_S) -> list[dict]:
        """Every state seen until the document ends (polled with a deadline, never slept to green)."""
        seen = []
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            doc = self.get(doc_id)
            seen.append(doc)
            if doc["status"] != "in_progress":
                return seen
            time.sleep(0.02)
        raise AssertionError(f"{doc_id} still in progress after {deadline} s: {seen[-1]}")

    def cited(self, question: str, collection: str) -> set[str]:
        r = self.http.post("/v1/rag/query", json={"query": question, "collection": collection, "top_k": 10})
        assert r.status_code == 200, r.text
        return {c["document_id"] for c in r.json()["citations"]}

    def listed(self, collection: str) -> list[str]:
        r = self.http.get("/v1/documents", params={"collection": collection, "limit": 100})
        assert r.status_code == 200, r.text
        return [d["id"] for d in r.json()["data"]]


def error_shape(e: dict) -> None:
    assert set(e) == ERROR_FIELDS, e
    assert isinstance(e["message"], str) and e["message"].strip(), e


@pytest.fixture(scope="module")
def gw(sim, tmp_path_factory):
    secrets, config = {}, {}
    for name, team in (("a", "t1"), ("a2", "t1"), ("b", "t2")):
        secret, hash_ = harness.new_key()
        secrets[name] = secret
        config[name] = ("member", hash_, team)
    directory = tmp_path_factory.mktemp("ingest-gw")
    cfg = harness.gateway_config(harness.fleet_models(sim.url), config)
    p = harness.start_gateway(cfg, directory)
    clients = {name: Docs(p, s) for name, s in secrets.items()}
    yield p, clients
    p.kill()


def test_an_upload_answers_at_once_and_completes_with_its_progress_moving(gw):
    _, api = gw
    c = new_collection()
    data = long_text(40, "alpha")
    started = time.monotonic()
    r = api["a"].upload("manual.txt", data, c)
    answered = time.monotonic() - started
    assert r.status_code == 202, r.text
    assert int(r.headers["openai-poll-after-ms"]) > 0
    doc = r.json()
    assert doc["id"].startswith("doc_") and doc["object"] == "document"
    assert doc["status"] == "in_progress" and doc["last_error"] is None, doc
    assert doc["bytes"] == len(data) and doc["collection"] == c and doc["filename"] == "manual.txt"
    assert set(doc["progress"]) == {"pages", "pages_done", "chunks", "chunks_done"}
    assert answered < 5, f"the upload waited {answered:.1f} s for ingestion"
    # Not searched nor listed before it completed.
    assert doc["id"] not in api["a"].cited("How are harbour cranes checked?", c)
    assert api["a"].listed(c) == []
    # The same bytes again while it is ingested: the same document.
    again = api["a"].upload("manual.txt", data, c)
    assert again.status_code == 202 and again.json()["id"] == doc["id"], again.text

    seen = api["a"].poll(doc["id"])
    final = seen[-1]
    assert final["status"] == "completed", final
    assert final["chunks"] >= 10 and final["progress"]["chunks_done"] == final["chunks"], final
    assert final["kind"] == "text" and final["last_error"] is None
    # Progress moved: the chunk total became known, and chunks done grew through several values.
    moving = [d["progress"]["chunks_done"] for d in seen if d["status"] == "in_progress"
              and d["progress"]["chunks"] is not None]
    assert moving == sorted(moving), moving
    assert len(set(moving)) >= 2, f"progress seen: {moving}"
    assert all(d["progress"]["chunks"] == final["chunks"] for d in seen
               if d["progress"]["chunks"] is not None)
    # Completed: searched and listed; a re-upload is the stored document.
    assert doc["id"] in api["a"].cited("How are harbour cranes checked?", c)
    assert api["a"].listed(c) == [doc["id"]]
    stored = api["a"].upload("manual.txt", data, c)
    assert stored.status_code == 200 and stored.json()["id"] == doc["id"]
    assert stored.json()["status"] == "completed"
    # Another team sees none of it.
    assert api["b"].http.get(f"/v1/documents/{doc['id']}").status_code == 404


def test_wait_true_answers_as_the_synchronous_upload_did(gw):
    _, api = gw
    c = new_collection()
    r = api["a"].upload("short.txt", b"The west gate opens at dawn.\n", c, wait=True)
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "completed" and r.json()["chunks"] == 1
    bad = api["a"].upload("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 40, c, wait=True,
                          ctype="application/pdf")
    assert 400 <= bad.status_code < 500, bad.text
    error_shape(bad.json()["error"])
    r = api["a"].http.post("/v1/documents/upload", params={"wait": "soon"},
                           files={"file": ("a.txt", b"x", "text/plain")})
    assert r.status_code == 400 and r.json()["error"]["param"] == "wait", r.text


def test_a_failing_document_fails_with_its_error_and_others_are_unaffected(gw):
    _, api = gw
    c = new_collection()
    bad = api["a"].upload("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 40, c, ctype="application/pdf")
    good = api["a"].upload("fine.txt", long_text(3, "beta"), c)
    assert bad.status_code == 202 and good.status_code == 202, (bad.text, good.text)
    failed = api["a"].poll(bad.json()["id"])[-1]
    assert failed["status"] == "failed", failed
    error_shape(failed["last_error"])
    assert failed["last_error"]["type"] == "invalid_request_error"
    assert api["a"].poll(good.json()["id"])[-1]["status"] == "completed"
    assert api["a"].listed(c) == [good.json()["id"]]
    # A failed upload is not stored: the same bytes may be tried again.
    assert api["a"].upload("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 40, c,
                           ctype="application/pdf").json()["id"] != bad.json()["id"]


def test_cancel_stops_an_upload_which_is_never_searched(gw):
    _, api = gw
    c = new_collection()
    r = api["a"].upload("huge.txt", long_text(160, "gamma"), c)
    assert r.status_code == 202, r.text
    doc_id = r.json()["id"]
    # Another team cannot cancel it.
    assert api["b"].http.post(f"/v1/documents/{doc_id}/cancel").status_code == 404
    cancelled = api["a"].http.post(f"/v1/documents/{doc_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    # Cancelling again answers the same; it stays cancelled, unlisted and unsearched.
    assert api["a"].http.post(f"/v1/documents/{doc_id}/cancel").json()["status"] == "cancelled"
    harness.wait_for(lambda: api["a"].get(doc_id)["status"] == "cancelled", timeout=30)
    assert api["a"].listed(c) == []
    assert doc_id not in api["a"].cited("How are harbour cranes checked?", c)
    assert api["a"].http.post("/v1/documents/doc_none/cancel").status_code == 404


def test_a_small_upload_of_another_team_is_not_queued_behind_a_long_queue(gw):
    """Two teams uploading at once: team A queues several long documents (more than the workers),
    then team B one short one; B's is claimed before A's later ones (fair scheduling), so it
    completes before A's last."""
    _, api = gw
    ca, cb = new_collection(), new_collection()
    a_ids = []
    for i in range(4):
        r = api["a2"].upload(f"long-{i}.txt", long_text(24, f"delta{i}"), ca)
        assert r.status_code == 202, r.text
        a_ids.append(r.json()["id"])
    r = api["b"].upload("note.txt", b"The east gate closes at dusk.\n", cb)
    assert r.status_code == 202, r.text
    b_id = r.json()["id"]

    def finished_at(client: Docs, doc_id: str) -> float:
        seen = client.poll(doc_id)
        assert seen[-1]["status"] == "completed", seen[-1]
        return time.monotonic()

    with ThreadPoolExecutor(5) as pool:
        b_done = pool.submit(finished_at, api["b"], b_id)
        a_done = [pool.submit(finished_at, api["a2"], i) for i in a_ids]
        b_time, a_times = b_done.result(), [f.result() for f in a_done]
    assert b_time < a_times[-1], "team B's one-page upload waited for all of team A's"
    assert b_time < max(a_times[2:]), "team B's upload was served after team A's queue"


def test_a_gateway_killed_mid_ingestion_resumes_the_document_after_restart(sim, tmp_path_factory):
    """SIGKILL while a long document is being embedded; the restarted gateway (same data
    directory) resumes it and completes it with exactly the chunks an uninterrupted run makes
    (no duplicates, no gaps), searchable."""
    secret, hash_ = harness.new_key()
    directory = tmp_path_factory.mktemp("ingest-kill")
    cfg = harness.gateway_config(harness.fleet_models(sim.url), {"a": ("member", hash_, "t1")})
    first = harness.start_gateway(cfg, directory)
    docs = Docs(first, secret)
    data, c = long_text(60, "epsilon"), new_collection()
    r = docs.upload("long.txt", data, c)
    assert r.status_code == 202, r.text
    doc_id = r.json()["id"]
    harness.wait_for(lambda: docs.get(doc_id)["progress"]["chunks_done"] > 0, timeout=180,
                     what="the first window embedded")
    mid = docs.get(doc_id)
    assert mid["status"] == "in_progress" and mid["progress"]["chunks_done"] < mid["progress"]["chunks"], mid
    first.kill()  # SIGKILL: no drain, the lease still names the dead process

    second = harness.start_gateway(cfg, directory)
    docs = Docs(second, secret)
    final = docs.poll(doc_id)[-1]
    assert final["status"] == "completed", final
    assert final["progress"]["chunks_done"] == final["chunks"] == mid["progress"]["chunks"], final
    # The same bytes ingested without interruption make as many chunks.
    rc = new_collection()
    reference = docs.upload("long.txt", data, rc, wait=True)
    assert reference.status_code == 201, reference.text
    assert reference.json()["chunks"] == final["chunks"]
    # Searchable, each chunk once, under exactly the ids an uninterrupted run gives: derived
    # from the document id and the chunk's ordinal (docs/DOCUMENTS.md), none left over from
    # the killed attempt; chunk by chunk the same text as the reference run's.
    resumed = chunks_by_ordinal(docs, doc_id, c, final["chunks"])
    uninterrupted = chunks_by_ordinal(docs, reference.json()["id"], rc, final["chunks"])
    common = resumed.keys() & uninterrupted.keys()
    assert len(common) >= 10, (resumed.keys(), uninterrupted.keys())
    assert all(resumed[i] == uninterrupted[i] for i in common)
    second.kill()


def chunk_id(document_id: str, ordinal: int) -> str:
    """A chunk's id as docs/DOCUMENTS.md defines it (SHA-256 of `<document>:<ordinal>`, its first
    8 bytes big-endian, top bit cleared), as citations show it."""
    digest = hashlib.sha256(f"{document_id}:{ordinal}".encode()).digest()[:8]
    return f"chk_{int.from_bytes(digest, 'big') & ((1 << 63) - 1)}"


def chunks_by_ordinal(docs: Docs, doc_id: str, collection: str, chunks: int) -> dict[int, str]:
    """The document's cited chunks (several questions, filtered to it) by ordinal; every cited id
    must be one of the ids its `chunks` ordinals derive, each cited once per answer."""
    ids = {chunk_id(doc_id, i): i for i in range(chunks)}
    out: dict[int, str] = {}
    for question in ("How are beehives inspected?", "How are harbour cranes checked?",
                     "What does the tram maintenance routine require?", "Which gauge is read for glaciers?"):
        r = docs.http.post("/v1/rag/query", json={"query": question, "collection": collection, "top_k": 50,
                                                  "filters": {"document_ids": [doc_id]}})
        assert r.status_code == 200, r.text
        cited = [(x["chunk_id"], x["text"]) for x in r.json()["citations"]]
        assert cited and len(cited) == len({i for i, _ in cited}), cited
        for cid, text in cited:
            assert cid in ids, f"{cid} is not one of {doc_id}'s derived chunk ids"
            out[ids[cid]] = text
    return out


def test_the_queue_is_measured_in_metrics(gw):
    p, api = gw
    c = new_collection()
    r = api["a"].upload("m.txt", long_text(2, "zeta"), c, wait=True)
    assert r.status_code == 201, r.text
    m = harness.metrics(p)
    for gauge in ("sovereign_ingest_queued", "sovereign_ingest_running", "sovereign_ingest_oldest_age_seconds",
                  "sovereign_ingest_queued_bytes"):
        assert m[gauge] >= 0, gauge
    assert m["sovereign_ingest_completed_total"] >= 1
    assert m["sovereign_ingest_chunks_total"] >= r.json()["chunks"]
    assert m["sovereign_ingest_failed_total"] >= 0


def test_a_full_queue_answers_429_in_the_error_shape_per_team_and_in_all(sim, tmp_path_factory):
    """`[documents] queue_team_bytes` / `queue_bytes` bound what may wait: an upload that would
    pass a limit is refused at once with 429 `ingestion_queue_full`, naming which (nothing
    queued, nothing stored); one under both is accepted and completes."""
    secret, hash_ = harness.new_key()
    directory = tmp_path_factory.mktemp("ingest-full")
    extra = harness.UNLIMITED + "\n[documents]\nqueue_team_bytes = 4000\nqueue_bytes = 3000\n"
    cfg = harness.gateway_config(harness.fleet_models(sim.url), {"a": ("member", hash_, "t1")}, extra=extra)
    p = harness.start_gateway(cfg, directory)
    try:
        docs, c = Docs(p, secret), new_collection()
        for paragraphs, which in ((4, "team"), (3, "gateway")):
            data = long_text(paragraphs, "zeta")  # 4,905 bytes: over the team's; 3,736: over all
            r = docs.upload("big.txt", data, c)
            assert r.status_code == 429, r.text
            error_shape(r.json()["error"])
            assert r.json()["error"]["code"] == "ingestion_queue_full"
            assert which in r.json()["error"]["message"], r.json()
        assert docs.listed(c) == []
        r = docs.upload("small.txt", long_text(1, "eta"), c)
        assert r.status_code == 202, r.text
        assert docs.poll(r.json()["id"])[-1]["status"] == "completed"
        assert len(docs.listed(c)) == 1
    finally:
        p.kill()
