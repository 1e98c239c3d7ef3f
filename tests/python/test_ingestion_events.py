"""A queued upload's end is an event (issue 44, item 2), through the real binary: when a
document or a vector-store file finishes, fails or is cancelled, the team's webhooks receive
`request.completed` once (signed, the document id, status, chunks and `last_error`, the upload's
request id), and the
journal holds the upload's entry and the completion's, under the same request id.
docs/DOCUMENTS.md, "Asynchronous ingestion"; docs/WEBHOOKS.md."""

from __future__ import annotations

import httpx
import pytest

import harness
from test_documents import fixture, long_text

WEBHOOKS = dict(allow_loopback=True, retry_initial_ms=30, retry_max_ms=120, max_age_ms=60000,
                timeout_ms=2000, request_completed_after_ms=600000)


@pytest.fixture(scope="module")
def gw(sim, tmp_path_factory):
    secrets, config = {}, {}
    for name, role, team in (("admin", "admin", "t1"), ("member", "member", "t1"), ("other", "member", "t2")):
        secret, hash_ = harness.new_key()
        secrets[name] = secret
        config[name] = (role, hash_, team)
    extra = harness.UNLIMITED + "\n[webhooks]\n" + "".join(
        f"{k} = {harness.toml_value(v)}\n" for k, v in WEBHOOKS.items())
    p = harness.start_gateway(harness.gateway_config(harness.fleet_models(sim.url), config, extra=extra),
                              tmp_path_factory.mktemp("ingest-events"))
    http = {n: httpx.Client(base_url=p.url, headers={"Authorization": f"Bearer {s}"}, timeout=120)
            for n, s in secrets.items()}
    receiver = harness.Receiver()
    r = http["admin"].post("/v1/admin/webhooks", json={"url": receiver.url, "events": ["request.completed"],
                                                       "team_id": "t1"})
    assert r.status_code == 201, r.text
    receiver.secret = r.json()["secret"]
    yield p, http, receiver
    receiver.close()
    p.kill()


def completions(receiver: harness.Receiver, document_id: str) -> list[dict]:
    return [a["json"] for a in receiver.accepted() if a["json"]["details"].get("document_id") == document_id]


def test_a_finished_upload_is_announced_and_journaled(gw):
    _, http, receiver = gw
    r = http["member"].post("/v1/documents/upload", data={"collection": "events"},
                            files={"file": ("gate.txt", b"The north gate opens at six.\n", "text/plain")})
    assert r.status_code == 202, r.text
    doc = r.json()
    upload_request = r.headers["x-audit-trace-id"]
    [event] = harness.wait_for(lambda: completions(receiver, doc["id"]), timeout=120,
                               what="request.completed for the document")
    assert event["event"] == "request.completed" and event["request_id"] == upload_request, event
    d = event["details"]
    assert (d["object"], d["status"], d["chunks"], d["last_error"], d["collection"]) == (
        "document", "completed", 1, None, "events"), d
    assert d["latency_ms"] >= 0 and d["model"]
    assert event["metadata"]["team_id"] == "t1"
    assert receiver.bad_signatures == 0
    # The journal: the upload's entry and the completion's, one request id.
    entries = harness.wait_for(
        lambda: (e := [x for x in harness.journal_entries(http["admin"], upload_request)])
        and {x["action"] for x in e} >= {"documents.upload", "documents.ingest"} and e,
        timeout=30, what="both journal entries")
    done = [e for e in entries if e["action"] == "documents.ingest"]
    assert len(done) == 1 and done[0]["status"] == "success", done
    assert done[0]["prompt_hash"] == [e for e in entries if e["action"] == "documents.upload"][0]["prompt_hash"]
    assert done[0]["team_id"] == "t1" and done[0]["prompt_tokens"] > 0


def test_a_failed_vector_store_file_is_announced_with_its_error(gw):
    _, http, receiver = gw
    r = http["member"].post("/v1/files", data={"purpose": "assistants"},
                            files={"file": ("locked.pdf", fixture("encrypted.pdf"), "application/pdf")})
    assert r.status_code in (200, 201), r.text
    file_id = r.json()["id"]
    store = http["member"].post("/v1/vector_stores", json={"name": "events"}).json()["id"]
    r = http["member"].post(f"/v1/vector_stores/{store}/files", json={"file_id": file_id})
    assert r.status_code == 200 and r.json()["status"] == "in_progress", r.text
    attach_request = r.headers["x-audit-trace-id"]
    [event] = harness.wait_for(
        lambda: [a["json"] for a in receiver.accepted() if a["json"]["details"].get("file_id") == file_id],
        timeout=120, what="request.completed for the file")
    d = event["details"]
    assert event["request_id"] == attach_request
    assert (d["object"], d["status"], d["collection"], d["chunks"]) == ("vector_store.file", "failed", store, None), d
    assert d["last_error"]["code"] == "encrypted" and d["last_error"]["message"], d
    assert set(d["last_error"]) == {"type", "code", "message", "param"}
    entries = harness.wait_for(
        lambda: [e for e in harness.journal_entries(http["admin"], attach_request)
                 if e["action"] == "vector_stores.files.ingest"],
        timeout=30, what="the completion's journal entry")
    assert entries[0]["status"] == "rejected", entries


def test_another_teams_upload_is_not_announced_to_this_teams_webhook(gw):
    _, http, receiver = gw
    r = http["other"].post("/v1/documents/upload", params={"wait": "true"}, data={"collection": "theirs"},
                           files={"file": ("t2.txt", b"Team two keeps its own notes.\n", "text/plain")})
    assert r.status_code == 201, r.text
    # A later upload of this team is announced; the other team's, finished before it, never is.
    mine = http["member"].post("/v1/documents/upload", params={"wait": "true"}, data={"collection": "events"},
                               files={"file": ("later.txt", b"The south gate closes at nine.\n", "text/plain")})
    assert mine.status_code == 201, mine.text
    harness.wait_for(lambda: completions(receiver, mine.json()["id"]), timeout=60, what="this team's event")
    assert completions(receiver, r.json()["id"]) == []


def test_a_cancelled_upload_is_announced_once_as_cancelled(gw):
    _, http, receiver = gw
    r = http["member"].post("/v1/documents/upload", data={"collection": "events"},
                            files={"file": ("long.txt", long_text(160).encode(), "text/plain")})
    assert r.status_code == 202, r.text
    doc, upload_request = r.json()["id"], r.headers["x-audit-trace-id"]
    for _ in range(2):  # the second cancel finds it ended: nothing more is announced
        cancelled = http["member"].post(f"/v1/documents/{doc}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled", cancelled.text
    [event] = harness.wait_for(lambda: completions(receiver, doc), timeout=60,
                               what="request.completed for the cancelled upload")
    assert event["request_id"] == upload_request
    d = event["details"]
    assert (d["status"], d["chunks"], d["last_error"]) == ("cancelled", None, None), d
    entries = harness.wait_for(
        lambda: [e for e in harness.journal_entries(http["admin"], upload_request)
                 if e["action"] == "documents.ingest"],
        timeout=30, what="the cancelled upload's completion entry")
    assert [e["status"] for e in entries] == ["rejected"], entries
    # A later upload is announced after it: the cancelled one was announced once.
    later = http["member"].post("/v1/documents/upload", params={"wait": "true"}, data={"collection": "events"},
                                files={"file": ("after.txt", b"The east gate opens at seven.\n", "text/plain")})
    assert later.status_code == 201, later.text
    harness.wait_for(lambda: completions(receiver, later.json()["id"]), timeout=60, what="the later upload's event")
    assert len(completions(receiver, doc)) == 1


def test_a_file_deleted_while_attached_is_announced_cancelled(gw):
    _, http, receiver = gw
    r = http["member"].post("/v1/files", data={"purpose": "assistants"},
                            files={"file": ("long.txt", long_text(160).encode(), "text/plain")})
    assert r.status_code in (200, 201), r.text
    file_id = r.json()["id"]
    store = http["member"].post("/v1/vector_stores", json={"name": "deleted-file"}).json()["id"]
    r = http["member"].post(f"/v1/vector_stores/{store}/files", json={"file_id": file_id})
    assert r.status_code == 200 and r.json()["status"] == "in_progress", r.text
    assert http["member"].delete(f"/v1/files/{file_id}").json()["deleted"] is True
    [event] = harness.wait_for(
        lambda: [a["json"] for a in receiver.accepted() if a["json"]["details"].get("file_id") == file_id],
        timeout=60, what="request.completed for the deleted file's attachment")
    assert event["details"]["status"] == "cancelled", event
    # The store forgot it: not listed, not counted, never searched.
    assert http["member"].get(f"/v1/vector_stores/{store}/files/{file_id}").status_code == 404
    assert http["member"].get(f"/v1/vector_stores/{store}").json()["file_counts"]["total"] == 0
