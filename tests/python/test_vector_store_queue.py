"""Vector-store files through the ingestion queue (issue 44, item 1), through the real binary:
attaching a file (and a file batch) answers at once `in_progress` with `openai-poll-after-ms`;
the file moves to `completed`, `failed` (with `last_error`) or `cancelled`; the store's and the
batch's `file_counts` and status follow; only completed files are searched; the official
`openai` SDK's `files.upload_and_poll` / `create_and_poll` and `file_batches.upload_and_poll` /
`create_and_poll` work on their defaults. docs/DOCUMENTS.md, "Asynchronous ingestion"."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

import harness
from test_documents import fixture, long_text

DEADLINE_S = 240.0
QUESTION = "How are harbour cranes checked?"


@pytest.fixture(scope="module")
def gw(sim, tmp_path_factory):
    secrets, config = {}, {}
    for name, team in (("a", "t1"), ("b", "t2")):
        secret, hash_ = harness.new_key()
        secrets[name] = secret
        config[name] = ("member", hash_, team)
    p = harness.start_gateway(harness.gateway_config(harness.fleet_models(sim.url), config),
                              tmp_path_factory.mktemp("vs-queue"))
    sdk = {n: openai.OpenAI(base_url=f"{p.url}/v1", api_key=s, max_retries=0, timeout=120)
           for n, s in secrets.items()}
    http = {n: httpx.Client(base_url=p.url, headers={"Authorization": f"Bearer {s}"}, timeout=120)
            for n, s in secrets.items()}
    yield p, sdk, http
    p.kill()


def big(tag: str) -> bytes:
    """A text file of many chunks: long enough that its ingestion is seen in progress."""
    return long_text(60).encode() + f"\n\nHarbour cranes of {tag} are checked every morning.\n".encode()


def upload_file(client: openai.OpenAI, name: str, data: bytes) -> str:
    return client.files.create(file=(name, data), purpose="assistants").id


def searched(client: openai.OpenAI, store_id: str, query: str = QUESTION) -> set[str]:
    return {r.file_id for r in client.vector_stores.search(vector_store_id=store_id, query=query,
                                                           max_num_results=50)}


def poll_store(http: httpx.Client, store_id: str) -> list[dict]:
    """Every state of the store until none of its files is in progress (a deadline, the
    gateway's poll interval)."""
    seen, end = [], time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        r = http.get(f"/v1/vector_stores/{store_id}")
        assert r.status_code == 200, r.text
        seen.append(r.json())
        if r.json()["file_counts"]["in_progress"] == 0:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{store_id} still in progress: {seen[-1]}")


def test_attaching_answers_in_progress_and_the_file_completes(gw):
    _, sdk, http = gw
    client = sdk["a"]
    store = client.vector_stores.create(name="queued")
    file_id = upload_file(client, "manual.txt", big("alpha"))
    started = time.monotonic()
    r = http["a"].post(f"/v1/vector_stores/{store.id}/files", json={"file_id": file_id,
                                                                      "attributes": {"dept": "ops"}})
    assert time.monotonic() - started < 5, "the attach waited for ingestion"
    assert r.status_code == 200, r.text
    assert int(r.headers["openai-poll-after-ms"]) > 0
    vf = r.json()
    assert (vf["id"], vf["object"], vf["status"], vf["last_error"]) == (
        file_id, "vector_store.file", "in_progress", None), vf
    assert vf["vector_store_id"] == store.id and vf["attributes"] == {"dept": "ops"}
    # In progress: counted, listed under its filter, not searched.
    got = http["a"].get(f"/v1/vector_stores/{store.id}")
    assert got.json()["status"] == "in_progress", got.json()
    assert got.json()["file_counts"]["in_progress"] == 1 and got.json()["file_counts"]["total"] == 1
    listed = http["a"].get(f"/v1/vector_stores/{store.id}/files", params={"filter": "in_progress"}).json()
    assert [f["id"] for f in listed["data"]] == [file_id], listed
    assert file_id not in searched(client, store.id)
    # Attaching it again while it is queued: the same file, still one.
    again = http["a"].post(f"/v1/vector_stores/{store.id}/files", json={"file_id": file_id})
    assert again.status_code == 200 and again.json()["status"] == "in_progress", again.text

    # The SDK's own poll (its default interval is the header's) until it ends.
    done = client.vector_stores.files.poll(file_id, vector_store_id=store.id)
    assert done.status == "completed" and done.last_error is None, done
    seen = poll_store(http["a"], store.id)
    final = seen[-1]
    assert final["status"] == "completed" and final["file_counts"] == {
        "in_progress": 0, "completed": 1, "failed": 0, "cancelled": 0, "total": 1}, final
    assert final["usage_bytes"] == len(big("alpha"))
    assert file_id in searched(client, store.id)
    # Another team sees none of it.
    with pytest.raises(openai.NotFoundError):
        sdk["b"].vector_stores.files.retrieve(file_id, vector_store_id=store.id)


def test_the_sdk_upload_and_poll_and_create_and_poll_on_their_defaults(gw):
    _, sdk, _ = gw
    client = sdk["a"]
    store = client.vector_stores.create(name="helpers")
    up = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=("up.txt", big("beta")))
    assert up.status == "completed" and up.last_error is None, up
    file_id = upload_file(client, "made.txt", big("gamma"))
    made = client.vector_stores.files.create_and_poll(file_id=file_id, vector_store_id=store.id,
                                                      attributes={"k": "v"})
    assert (made.id, made.status, made.attributes) == (file_id, "completed", {"k": "v"}), made
    bad = client.vector_stores.files.upload_and_poll(vector_store_id=store.id,
                                                     file=("locked.pdf", fixture("encrypted.pdf")))
    assert bad.status == "failed" and bad.last_error.code == "invalid_file", bad
    got = client.vector_stores.retrieve(store.id)
    assert (got.status, got.file_counts.completed, got.file_counts.failed, got.file_counts.total) == (
        "completed", 2, 1, 3), got
    assert searched(client, store.id) == {up.id, file_id}


def test_file_batches_through_the_sdk(gw):
    _, sdk, http = gw
    client = sdk["a"]
    store = client.vector_stores.create(name="batches")
    batch = client.vector_stores.file_batches.upload_and_poll(
        vector_store_id=store.id,
        files=[("one.txt", big("delta")), ("two.txt", big("epsilon")), ("locked.pdf", fixture("encrypted.pdf"))])
    assert batch.id.startswith("vsfb_") and batch.vector_store_id == store.id, batch
    assert batch.status == "completed", batch
    counts = batch.file_counts
    assert (counts.in_progress, counts.completed, counts.failed, counts.cancelled, counts.total) == (0, 2, 1, 0, 3)
    files = list(client.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id))
    assert len(files) == 3 and sorted(f.status for f in files) == ["completed", "completed", "failed"]
    failed = list(client.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id, filter="failed"))
    assert [f.status for f in failed] == ["failed"] and failed[0].last_error.code == "invalid_file", failed
    assert client.vector_stores.file_batches.retrieve(batch.id, vector_store_id=store.id).status == "completed"
    # create_and_poll with ids, attributes for the whole batch.
    ids = [upload_file(client, f"c{i}.txt", big(f"zeta{i}")) for i in range(2)]
    made = client.vector_stores.file_batches.create_and_poll(vector_store_id=store.id, file_ids=ids,
                                                             attributes={"batch": "second"})
    assert made.status == "completed" and made.file_counts.completed == 2, made
    assert all(client.vector_stores.files.retrieve(i, vector_store_id=store.id).attributes == {"batch": "second"}
               for i in ids)
    assert set(ids) <= searched(client, store.id)
    assert client.vector_stores.retrieve(store.id).file_counts.total == 5
    # Another team's key, an unknown batch: 404; a batch of nothing: 400.
    with pytest.raises(openai.NotFoundError):
        sdk["b"].vector_stores.file_batches.retrieve(batch.id, vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.file_batches.retrieve("vsfb_nope", vector_store_id=store.id)
    r = http["a"].post(f"/v1/vector_stores/{store.id}/file_batches", json={"file_ids": []})
    assert r.status_code == 400 and r.json()["error"]["param"] == "file_ids", r.text
    r = http["a"].post(f"/v1/vector_stores/{store.id}/file_batches", json={"file_ids": ["file-nope"]})
    assert r.status_code == 404, r.text


def test_a_cancelled_batch_cancels_its_waiting_files_which_are_never_searched(gw):
    _, sdk, http = gw
    client = sdk["a"]
    store = client.vector_stores.create(name="cancelled")
    ids = [upload_file(client, f"long{i}.txt", long_text(160).encode() + f"\n\nHarbour cranes {i}.\n".encode())
           for i in range(4)]
    r = http["a"].post(f"/v1/vector_stores/{store.id}/file_batches", json={"file_ids": ids})
    assert r.status_code == 200, r.text
    batch = r.json()
    assert batch["status"] == "in_progress" and batch["file_counts"]["in_progress"] == 4, batch
    assert int(r.headers["openai-poll-after-ms"]) > 0
    cancelled = client.vector_stores.file_batches.cancel(batch["id"], vector_store_id=store.id)
    assert cancelled.status in ("cancelled", "cancelling"), cancelled
    final = client.vector_stores.file_batches.poll(batch["id"], vector_store_id=store.id)
    assert final.status == "cancelled" and final.file_counts.in_progress == 0, final
    assert final.file_counts.cancelled >= 2, final
    assert final.file_counts.cancelled + final.file_counts.completed == 4, final
    cancelled_ids = [f.id for f in client.vector_stores.files.list(vector_store_id=store.id, filter="cancelled")]
    assert cancelled_ids and set(cancelled_ids) <= set(ids)
    assert not set(cancelled_ids) & searched(client, store.id)


def test_a_file_detached_while_ingested_never_becomes_searchable(gw):
    _, sdk, http = gw
    client = sdk["a"]
    store = client.vector_stores.create(name="detached")
    file_id = upload_file(client, "gone.txt", long_text(160).encode())
    r = http["a"].post(f"/v1/vector_stores/{store.id}/files", json={"file_id": file_id})
    assert r.status_code == 200 and r.json()["status"] == "in_progress", r.text
    client.vector_stores.files.delete(file_id, vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.files.retrieve(file_id, vector_store_id=store.id)
    # A later file completes (the queue moved past the detached one), and the detached one is
    # neither listed nor searched.
    later = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=("later.txt", big("eta")))
    assert later.status == "completed", later
    assert [f.id for f in client.vector_stores.files.list(vector_store_id=store.id)] == [later.id]
    assert searched(client, store.id) == {later.id}
    got = client.vector_stores.retrieve(store.id)
    assert got.file_counts.total == 1 and got.file_counts.completed == 1, got


def test_a_file_deleted_while_its_attachment_waits_never_becomes_searchable(gw):
    """OpenAI's `DELETE /v1/files/{id}` removes the file from every vector store; a queued or
    running attachment of it is cancelled, so it never completes into a document of a deleted
    file."""
    _, sdk, http = gw
    client = sdk["a"]
    stores = [client.vector_stores.create(name=f"deleted-{i}") for i in range(2)]
    file_id = upload_file(client, "doomed.txt", long_text(160).encode() + b"\n\nHarbour cranes of zeta.\n")
    for store in stores:
        r = http["a"].post(f"/v1/vector_stores/{store.id}/files", json={"file_id": file_id})
        assert r.status_code == 200 and r.json()["status"] == "in_progress", r.text
    assert client.files.delete(file_id).deleted
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(file_id)
    # A later file in the first store completes (the queue moved past), and the deleted one is in
    # no store: not listed, not counted, not searched.
    later = client.vector_stores.files.upload_and_poll(vector_store_id=stores[0].id, file=("later.txt", big("theta")))
    assert later.status == "completed", later
    for store in stores:
        with pytest.raises(openai.NotFoundError):
            client.vector_stores.files.retrieve(file_id, vector_store_id=store.id)
        assert file_id not in [f.id for f in client.vector_stores.files.list(vector_store_id=store.id)]
        assert file_id not in searched(client, store.id)
    assert client.vector_stores.retrieve(stores[1].id).file_counts.total == 0
