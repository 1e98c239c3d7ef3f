"""OpenAI's Vector Stores API over the document library, driven by the official `openai` SDK
exactly as `file_search` users write it (only `base_url` and `api_key` changed):
`files.create` / `vector_stores.files.upload_and_poll` / `create_and_poll`, `vector_stores.search`
(English and Arabic PDFs, a DOCX, attribute filters, `score_threshold`), list / retrieve /
delete of stores, their files and files, team scoping, roles, hostile files, bad bodies, and a
vector store id used as `collection` in `POST /v1/rag/query`.

Servers are started once per module. Tests that change a store make their own; the read-only
ones share `library` (three fixtures attached once)."""

from __future__ import annotations

import time
import uuid

import httpx
import openai
import pytest

import harness
from test_documents import (AR_PAGE1_QUESTION, AR_PAGE2_QUESTION, EN_PAGE1_QUESTION, EN_PAGE2_QUESTION,
                            ERROR_FIELDS, FIXTURES, UNANSWERABLE, docx, fixture, long_text, marker, png,
                            zip_bomb_docx)

DOCX_QUESTION = "تحتفظ المؤسسة بالسجلات لمدة عشر سنوات"  # ar_libreoffice.docx: "... لمدة لا تقل عن عشر سنوات."
FIRE_DOCX = ["Fire doors on every floor stay closed at all times.",
             "Fire drills happen on the first Monday of every month at ten in the morning."]
FIRE_QUESTION = "When do the fire drills happen?"


# --- servers and clients -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def team_keys():
    """Keys of two teams: (secrets by name, the config's (role, hash, team) by name)."""
    names = {"admin": ("admin", "t1"), "member": ("member", "t1"), "auditor": ("auditor", "t1"),
             "member2": ("member", "t2")}
    secrets, config = {}, {}
    for name, (role, team) in names.items():
        secret, hash_ = harness.new_key()
        secrets[name] = secret
        config[name] = (role, hash_, team)
    return secrets, config


@pytest.fixture(scope="module")
def gw(sim, team_keys, tmp_path_factory):
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=5000, stream_idle_timeout_ms=5000), team_keys[1])
    p = harness.start_gateway(config, tmp_path_factory.mktemp("vs-gw"))
    yield p
    p.kill()


@pytest.fixture(scope="module")
def sdk(gw, team_keys):
    """`sdk["member"]` etc.: an official OpenAI client per key."""
    clients = {name: openai.OpenAI(base_url=f"{gw.url}/v1", api_key=secret, max_retries=0, timeout=120)
               for name, secret in team_keys[0].items()}
    yield clients
    for c in clients.values():
        c.close()


@pytest.fixture(scope="module")
def http(gw, team_keys):
    """`http["member"]` etc.: plain HTTP to the gateway as each key."""
    clients = {name: httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {secret}"}, timeout=120)
               for name, secret in team_keys[0].items()}
    yield clients
    for c in clients.values():
        c.close()


@pytest.fixture(scope="module")
def library(sdk):
    """A store of the member's team holding the English PDF, the Arabic PDF and the Arabic DOCX,
    each with attributes: (store, {fixture name: its vector_store.file})."""
    client = sdk["member"]
    store = client.vector_stores.create(name="compliance library", metadata={"owner": "risk"})
    attached = {}
    for name, attributes in (("en_fpdf.pdf", {"lang": "en", "kind": "pdf", "year": 2026}),
                             ("ar_harfbuzz.pdf", {"lang": "ar", "kind": "pdf", "year": 2025}),
                             ("ar_libreoffice.docx", {"lang": "ar", "kind": "docx", "year": 2026})):
        with open(FIXTURES / name, "rb") as f:
            attached[name] = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=f,
                                                                        attributes=attributes)
    return store, attached


@pytest.fixture(scope="module")
def manual(sdk):
    """A store holding one long text file of many chunks, each paragraph about its own topic."""
    client = sdk["member"]
    store = new_store(client)
    upload(client, store.id, "manual.txt", long_text(12).encode())
    return store


# --- helpers -----------------------------------------------------------------------------------

def search(client: openai.OpenAI, store_id: str, query, **kwargs) -> list:
    """`vector_stores.search`, the page iterated as users do; each result checked for shape."""
    results = list(client.vector_stores.search(vector_store_id=store_id, query=query, **kwargs))
    for r in results:
        assert r.file_id.startswith("file-"), r
        assert isinstance(r.filename, str) and r.filename, r
        assert 0.0 <= r.score <= 1.0, r
        assert r.content and all(c.type == "text" and c.text.strip() for c in r.content), r
        assert isinstance(r.attributes, dict), r
    return results


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content)


def file_ids(results) -> set[str]:
    return {r.file_id for r in results}


def new_store(client: openai.OpenAI, **kwargs):
    return client.vector_stores.create(name=kwargs.pop("name", f"store-{uuid.uuid4().hex[:8]}"), **kwargs)


def upload(client: openai.OpenAI, store_id: str, filename: str, data: bytes, **kwargs):
    """`upload_and_poll` of bytes built in the test (a (filename, bytes) tuple, as the SDK allows)."""
    return client.vector_stores.files.upload_and_poll(vector_store_id=store_id, file=(filename, data), **kwargs)


def error_shape(e: openai.APIStatusError) -> dict:
    body = e.response.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_FIELDS, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"].strip(), body
    return body["error"]


def store_ids(client: openai.OpenAI) -> set[str]:
    return {s.id for s in client.vector_stores.list()}


def settled(client: openai.OpenAI, store_id: str, deadline: float = 180.0):
    """The store once none of its files is `in_progress`, polled as the SDK's helpers poll (the
    interval the gateway's `openai-poll-after-ms` asks for), with a deadline."""
    end = time.monotonic() + deadline
    while True:
        r = client.vector_stores.with_raw_response.retrieve(store_id)
        store = r.parse()
        if store.file_counts.in_progress == 0:
            assert store.status == "completed", store
            return store
        assert store.status == "in_progress", store
        assert time.monotonic() < end, f"{store_id} still in progress: {store.file_counts}"
        time.sleep(int(r.headers.get("openai-poll-after-ms", "1000")) / 1000)


def attached_ids(client: openai.OpenAI, store_id: str) -> list[str]:
    return [f.id for f in client.vector_stores.files.list(vector_store_id=store_id)]


# --- files -------------------------------------------------------------------------------------

def test_files_create_list_retrieve_delete(sdk):
    client = sdk["member"]
    data = fixture("en_fpdf.pdf")
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        created = client.files.create(file=f, purpose="assistants")
    assert created.id.startswith("file-") and created.object == "file"
    assert (created.bytes, created.filename, created.purpose, created.status) == (
        len(data), "en_fpdf.pdf", "assistants", "processed")
    assert abs(created.created_at - time.time()) < 600, created
    assert client.files.retrieve(created.id) == created
    assert created.id in {f.id for f in client.files.list()}

    for purpose in ("user_data", "batch", "fine-tune", "vision", "evals"):
        other = client.files.create(file=("notes.txt", b"Plain notes.\n"), purpose=purpose)
        assert other.purpose == purpose
        client.files.delete(other.id)

    deleted = client.files.delete(created.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "file", True)
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        client.files.delete(created.id)
    assert created.id not in {f.id for f in client.files.list()}


def test_files_create_with_a_bad_purpose_is_400(sdk):
    with pytest.raises(openai.BadRequestError) as e:
        sdk["member"].files.create(file=("notes.txt", b"Plain notes.\n"), purpose="homework")
    error_shape(e.value)


# --- vector stores -----------------------------------------------------------------------------

def test_create_retrieve_list_a_vector_store(sdk, library):
    client = sdk["member"]
    store, attached = library
    assert store.id.startswith("vs_") and store.object == "vector_store"
    assert store.name == "compliance library" and store.metadata == {"owner": "risk"}
    assert store.status == "completed"
    assert abs(store.created_at - time.time()) < 600, store
    got = client.vector_stores.retrieve(store.id)
    assert (got.id, got.name, got.metadata, got.status) == (store.id, store.name, store.metadata, "completed")
    assert got.file_counts.completed == got.file_counts.total == 3, got.file_counts
    assert got.file_counts.in_progress == got.file_counts.failed == 0
    total_bytes = sum(len(fixture(n)) for n in attached)
    assert got.usage_bytes == total_bytes, (got.usage_bytes, total_bytes)
    assert store.id in store_ids(client)
    # Options the SDK offers are accepted.
    other = client.vector_stores.create(name="with options", expires_after={"anchor": "last_active_at", "days": 7},
                                        chunking_strategy={"type": "auto"})
    assert other.status == "completed" and other.file_counts.total == 0
    assert client.vector_stores.delete(other.id).deleted


def test_attached_files_are_completed_and_listed(sdk, library):
    client = sdk["member"]
    store, attached = library
    for name, vf in attached.items():
        assert vf.id.startswith("file-") and vf.object == "vector_store.file", vf
        assert vf.vector_store_id == store.id
        assert vf.status == "completed" and vf.last_error is None, vf
        assert vf.usage_bytes == len(fixture(name)), (name, vf.usage_bytes)
        assert client.files.retrieve(vf.id).filename == name
        got = client.vector_stores.files.retrieve(vf.id, vector_store_id=store.id)
        assert (got.id, got.status, got.attributes) == (vf.id, "completed", vf.attributes)
    assert attached["en_fpdf.pdf"].attributes == {"lang": "en", "kind": "pdf", "year": 2026}
    assert sorted(attached_ids(client, store.id)) == sorted(vf.id for vf in attached.values())


@pytest.mark.parametrize("query, param", [
    ("limit=0", "limit"), ("limit=101", "limit"), ("limit=ten", "limit"), ("limit=-3", "limit"),
    ("order=newest", "order"), ("order=", "order"), ("after=", "after"), ("colour=red", "colour"),
])
def test_bad_list_parameters_are_400_not_ignored(http, library, query, param):
    """Issue 49, red team: the vector-store and file lists ignored a bad `limit` or `order`."""
    store, _ = library
    paths = ["/v1/vector_stores", f"/v1/vector_stores/{store.id}/files"]
    if query != "limit=101":  # files take up to 10,000
        paths.append("/v1/files")
    for path in paths:
        r = http["member"].get(f"{path}?{query}")
        assert r.status_code == 400, (path, query, r.text)
        error = r.json()["error"]
        assert error["type"] == "invalid_request_error" and error["param"] == param, (path, error)
    r = http["member"].get("/v1/files?limit=10001")
    assert r.status_code == 400 and r.json()["error"]["param"] == "limit"
    r = http["member"].get("/v1/files?purpose=fun")
    assert r.status_code == 400 and r.json()["error"]["param"] == "purpose"


def test_lists_page_with_limit_order_and_after(sdk, http, library):
    """The lists honour OpenAI's paging: the SDK's auto-pagination walks them whole, in order."""
    client = sdk["member"]
    store, attached = library
    made = [new_store(client, name=f"paged-{i}").id for i in range(3)]
    try:
        newest = [s["id"] for s in http["member"].get("/v1/vector_stores?limit=100").json()["data"]]
        assert newest[:3] == made[::-1], "newest first"
        page = http["member"].get("/v1/vector_stores?limit=2").json()
        assert [s["id"] for s in page["data"]] == newest[:2] and page["has_more"] is True
        page = http["member"].get(f"/v1/vector_stores?limit=2&after={newest[1]}").json()
        assert [s["id"] for s in page["data"]] == newest[2:4]
        oldest = http["member"].get("/v1/vector_stores?limit=100&order=asc").json()["data"]
        assert [s["id"] for s in oldest] == newest[::-1]
        assert [s.id for s in client.vector_stores.list(limit=1)] == newest, "the SDK walks every page"
        files = [f.id for f in client.vector_stores.files.list(vector_store_id=store.id, limit=1, order="asc")]
        assert sorted(files) == sorted(vf.id for vf in attached.values()) and len(files) == 3
        assert [f.id for f in client.vector_stores.files.list(vector_store_id=store.id, filter="failed")] == []
        first = http["member"].get("/v1/files?limit=1").json()
        assert len(first["data"]) == 1 and first["has_more"] is True
    finally:
        for s in made:
            client.vector_stores.delete(s)


def test_files_create_then_create_and_poll(sdk):
    client = sdk["member"]
    store = new_store(client)
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        file = client.files.create(file=f, purpose="assistants")
    vf = client.vector_stores.files.create_and_poll(file_id=file.id, vector_store_id=store.id,
                                                    attributes={"dept": "legal"})
    assert (vf.id, vf.status, vf.vector_store_id, vf.attributes) == (file.id, "completed", store.id, {"dept": "legal"})
    # Attaching the same file again returns it: still one file, results not doubled.
    again = client.vector_stores.files.create_and_poll(file_id=file.id, vector_store_id=store.id)
    assert (again.id, again.status) == (file.id, "completed")
    assert attached_ids(client, store.id) == [file.id]
    assert client.vector_stores.retrieve(store.id).file_counts.total == 1
    results = search(client, store.id, EN_PAGE1_QUESTION, max_num_results=50)
    contents = [text_of(r) for r in results]
    assert len(contents) == len(set(contents)), contents


def test_create_with_file_ids_attaches_them(sdk):
    client = sdk["member"]
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        files = [client.files.create(file=("fire.docx", docx(FIRE_DOCX)), purpose="assistants"),
                 client.files.create(file=f, purpose="assistants")]
    store = client.vector_stores.create(name="at create", file_ids=[f.id for f in files])
    assert store.file_counts.total == 2, store.file_counts
    store = settled(client, store.id)
    assert store.file_counts.completed == store.file_counts.total == 2, store.file_counts
    assert sorted(attached_ids(client, store.id)) == sorted(f.id for f in files)
    [top, *_] = search(client, store.id, FIRE_QUESTION)
    assert top.file_id == files[0].id and "first Monday" in text_of(top)


# --- search ------------------------------------------------------------------------------------

def test_search_finds_the_english_pdf_with_the_answer(sdk, library):
    store, attached = library
    en = attached["en_fpdf.pdf"]
    for question, words in ((EN_PAGE1_QUESTION, "ten years"), (EN_PAGE2_QUESTION, "three business days")):
        results = search(sdk["member"], store.id, question)
        top = results[0]
        assert (top.file_id, top.filename) == (en.id, "en_fpdf.pdf"), results
        assert words in text_of(top), top
        assert top.attributes == {"lang": "en", "kind": "pdf", "year": 2026}


def test_search_finds_the_arabic_pdf_with_the_answer(sdk, library):
    store, attached = library
    ar = attached["ar_harfbuzz.pdf"]
    for question, words in ((AR_PAGE1_QUESTION, "عشر سنوات"), (AR_PAGE2_QUESTION, "المعاملات المشبوهة")):
        results = search(sdk["member"], store.id, question, filters={"type": "eq", "key": "kind", "value": "pdf"})
        top = results[0]
        assert (top.file_id, top.filename) == (ar.id, "ar_harfbuzz.pdf"), [(r.filename, text_of(r)) for r in results]
        assert words in text_of(top), top
    # Unfiltered, an Arabic question's best answer is Arabic.
    top = search(sdk["member"], store.id, AR_PAGE1_QUESTION)[0]
    assert top.filename in ("ar_harfbuzz.pdf", "ar_libreoffice.docx") and "عشر سنوات" in text_of(top), top


def test_search_finds_the_docx_with_the_answer(sdk, library):
    store, attached = library
    d = attached["ar_libreoffice.docx"]
    results = search(sdk["member"], store.id, DOCX_QUESTION)
    docx_results = [r for r in results if r.file_id == d.id]
    assert docx_results, [(r.filename, r.score) for r in results]
    assert docx_results[0].filename == "ar_libreoffice.docx"
    assert "عشر سنوات" in text_of(docx_results[0])
    # An English DOCX in its own store.
    client = sdk["member"]
    store2 = new_store(client)
    fire = upload(client, store2.id, "fire.docx", docx(FIRE_DOCX))
    [top, *_] = search(client, store2.id, FIRE_QUESTION)
    assert (top.file_id, top.filename) == (fire.id, "fire.docx") and "first Monday" in text_of(top)


def test_search_page_shape_and_query_as_a_list(sdk, http, library):
    store, attached = library
    r = http["member"].post(f"/v1/vector_stores/{store.id}/search", json={"query": EN_PAGE1_QUESTION})
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["object"] == "vector_store.search_results.page" and page["has_more"] is False, page
    assert page["search_query"] in (EN_PAGE1_QUESTION, [EN_PAGE1_QUESTION]), page["search_query"]
    assert 1 <= len(page["data"]) <= 10
    for item in page["data"]:
        assert {"file_id", "filename", "score", "attributes", "content"} <= set(item), item
        assert item["content"][0]["type"] == "text"
    # An array of strings is a valid query too.
    results = search(sdk["member"], store.id, [EN_PAGE2_QUESTION, "suspicious transactions"])
    assert results[0].file_id == attached["en_fpdf.pdf"].id and "three business days" in text_of(results[0])


def test_results_are_best_first_by_score(sdk, library):
    """OpenAI's results come best first by their `score`; here `score` is the calibrated
    confidence, so that is the order they must come in."""
    store, _ = library
    for question in (EN_PAGE1_QUESTION, EN_PAGE2_QUESTION, AR_PAGE1_QUESTION, DOCX_QUESTION):
        results = search(sdk["member"], store.id, question)
        scores = [r.score for r in results]
        assert scores == sorted(scores, reverse=True), (question, [(r.filename, r.score) for r in results])


def test_max_num_results_defaults_to_10_and_bounds_the_results(sdk, http, manual):
    client, store = sdk["member"], manual
    [doc] = http["member"].get("/v1/documents", params={"collection": store.id}).json()["data"]
    assert doc["chunks"] > 10, doc
    question = "Which gauge is checked in the lighthouse lamps routine?"
    assert len(search(client, store.id, question)) == 10
    assert len(search(client, store.id, question, max_num_results=1)) == 1
    assert len(search(client, store.id, question, max_num_results=3)) == 3
    everything = search(client, store.id, question, max_num_results=50)
    assert len(everything) == min(50, doc["chunks"])
    assert "lighthouse lamps" in text_of(everything[0])


def test_attribute_filters(sdk, library):
    store, attached = library
    ids = {name: vf.id for name, vf in attached.items()}

    def found(filters) -> set[str]:
        return file_ids(search(sdk["member"], store.id, EN_PAGE1_QUESTION, max_num_results=50, filters=filters))
    assert found({"type": "eq", "key": "lang", "value": "ar"}) == {
        ids["ar_harfbuzz.pdf"], ids["ar_libreoffice.docx"]}
    assert found({"type": "eq", "key": "kind", "value": "docx"}) == {ids["ar_libreoffice.docx"]}
    assert found({"type": "eq", "key": "year", "value": 2026}) == {ids["en_fpdf.pdf"], ids["ar_libreoffice.docx"]}
    assert found({"type": "and", "filters": [{"type": "eq", "key": "lang", "value": "ar"},
                                             {"type": "eq", "key": "kind", "value": "pdf"}]}) == {
        ids["ar_harfbuzz.pdf"]}
    assert found({"type": "and", "filters": [{"type": "eq", "key": "lang", "value": "en"},
                                             {"type": "eq", "key": "year", "value": 2025}]}) == set()
    assert found({"type": "eq", "key": "lang", "value": "fr"}) == set()
    for r in search(sdk["member"], store.id, EN_PAGE1_QUESTION, filters={"type": "eq", "key": "lang", "value": "ar"}):
        assert r.attributes["lang"] == "ar", r


def test_score_threshold_drops_weaker_results(sdk, manual):
    client, store = sdk["member"], manual
    question = "Which gauge is checked in the beehive inspection routine?"
    everything = search(client, store.id, question, max_num_results=20)
    assert len(everything) > 1
    scores = sorted(r.score for r in everything)
    floor = (scores[0] + scores[-1]) / 2
    kept = search(client, store.id, question, max_num_results=20, ranking_options={"score_threshold": floor})
    assert kept and all(r.score >= floor for r in kept), kept
    assert len(kept) == sum(1 for s in scores if s >= floor), (floor, scores, [r.score for r in kept])
    assert search(client, store.id, UNANSWERABLE, ranking_options={"score_threshold": 1.0}) == []
    assert len(search(client, store.id, question, ranking_options={"ranker": "auto", "score_threshold": 0.0})) == 10


def test_an_empty_store_has_no_results(sdk):
    client = sdk["member"]
    store = new_store(client)
    assert search(client, store.id, EN_PAGE1_QUESTION) == []
    assert attached_ids(client, store.id) == []


# --- deletion ----------------------------------------------------------------------------------

def test_a_file_deleted_from_a_store_leaves_its_results(sdk, http):
    client = sdk["member"]
    store = new_store(client)
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        en = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=f)
    fire = upload(client, store.id, "fire.docx", docx(FIRE_DOCX))
    assert en.id in file_ids(search(client, store.id, EN_PAGE1_QUESTION, max_num_results=50))

    deleted = client.vector_stores.files.delete(en.id, vector_store_id=store.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (en.id, "vector_store.file.deleted", True)
    for question in (EN_PAGE1_QUESTION, EN_PAGE2_QUESTION, "Article 2: Disclosure"):
        results = search(client, store.id, question, max_num_results=50)
        assert en.id not in file_ids(results), results
        assert all("ten years" not in text_of(r) for r in results)
    rag = http["member"].post("/v1/rag/query", json={"query": EN_PAGE1_QUESTION, "collection": store.id, "top_k": 50})
    assert rag.status_code == 200 and all(c["filename"] != "en_fpdf.pdf" for c in rag.json()["citations"]), rag.text
    assert attached_ids(client, store.id) == [fire.id]
    got = client.vector_stores.retrieve(store.id)
    assert got.file_counts.total == 1 and got.usage_bytes == len(docx(FIRE_DOCX)), got
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.files.retrieve(en.id, vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.files.delete(en.id, vector_store_id=store.id)
    # The file itself stays, and can be attached again (dedup does not keep it out).
    assert client.files.retrieve(en.id).id == en.id
    back = client.vector_stores.files.create_and_poll(file_id=en.id, vector_store_id=store.id)
    assert back.status == "completed"
    top = search(client, store.id, EN_PAGE1_QUESTION)[0]
    assert top.file_id == en.id and "ten years" in text_of(top)


def test_a_deleted_store_leaves_retrieval_at_once(sdk, http):
    client = sdk["member"]
    store, keep = new_store(client), new_store(client)
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        en = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=f)
    # The same file in a second store is a separate copy there.
    client.vector_stores.files.create_and_poll(file_id=en.id, vector_store_id=keep.id)
    assert search(client, store.id, EN_PAGE1_QUESTION)
    rag = http["member"].post("/v1/rag/query", json={"query": EN_PAGE1_QUESTION, "collection": store.id})
    assert rag.status_code == 200 and rag.json()["citations"], rag.text

    deleted = client.vector_stores.delete(store.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (store.id, "vector_store.deleted", True)
    rag = http["member"].post("/v1/rag/query", json={"query": EN_PAGE1_QUESTION, "collection": store.id, "top_k": 50})
    if rag.status_code == 200:
        assert rag.json()["citations"] == [], rag.json()
    else:
        assert rag.status_code == 404, rag.text
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.search(vector_store_id=store.id, query=EN_PAGE1_QUESTION)
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.retrieve(store.id)
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.delete(store.id)
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.files.list(vector_store_id=store.id)
    assert store.id not in store_ids(client)
    docs = http["member"].get("/v1/documents", params={"collection": store.id})
    assert docs.status_code == 200 and docs.json()["data"] == [], docs.text
    # The other store and the file itself are untouched.
    top = search(client, keep.id, EN_PAGE1_QUESTION)[0]
    assert top.file_id == en.id and "ten years" in text_of(top)
    assert client.files.retrieve(en.id).id == en.id


# --- the rag API on a vector store -------------------------------------------------------------

def test_a_vector_store_id_is_a_rag_collection(http, library):
    store, attached = library
    r = http["member"].post("/v1/rag/query", json={"query": EN_PAGE2_QUESTION, "collection": store.id})
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["object"] == "rag.result" and result["collection"] == store.id
    top = result["citations"][0]
    assert (top["filename"], top["page"]) == ("en_fpdf.pdf", 2), result
    assert "three business days" in top["text"]
    listed = http["member"].get("/v1/documents", params={"collection": store.id, "limit": 100})
    assert listed.status_code == 200
    assert sorted(d["filename"] for d in listed.json()["data"]) == sorted(attached), listed.json()


# --- teams and roles ---------------------------------------------------------------------------

def test_another_teams_stores_and_files_are_404(sdk, http, library):
    store, attached = library
    en = attached["en_fpdf.pdf"]
    theirs = sdk["member2"]
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.retrieve(store.id)
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.search(vector_store_id=store.id, query=EN_PAGE1_QUESTION)
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.files.list(vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.files.retrieve(en.id, vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.files.delete(en.id, vector_store_id=store.id)
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.files.create(vector_store_id=store.id, file_id=en.id)
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.delete(store.id)
    with pytest.raises(openai.NotFoundError):
        theirs.files.retrieve(en.id)
    with pytest.raises(openai.NotFoundError):
        theirs.files.delete(en.id)
    assert store.id not in store_ids(theirs)
    assert en.id not in {f.id for f in theirs.files.list()}
    # Their own store cannot take our file either.
    own = new_store(theirs)
    with pytest.raises(openai.NotFoundError):
        theirs.vector_stores.files.create_and_poll(file_id=en.id, vector_store_id=own.id)
    assert attached_ids(theirs, own.id) == []
    # Our store id as their rag collection finds nothing of ours.
    r = http["member2"].post("/v1/rag/query", json={"query": EN_PAGE1_QUESTION, "collection": store.id, "top_k": 50})
    if r.status_code == 200:
        assert r.json()["citations"] == [], r.json()
    else:
        assert r.status_code == 404, r.text
    # Their identical file in their own store is theirs, and ours is untouched.
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        mine = theirs.vector_stores.files.upload_and_poll(vector_store_id=own.id, file=f)
    assert file_ids(search(theirs, own.id, EN_PAGE1_QUESTION, max_num_results=50)) == {mine.id}
    assert sdk["member"].vector_stores.retrieve(store.id).file_counts.total == 3
    assert search(sdk["member"], store.id, EN_PAGE1_QUESTION)[0].file_id == en.id


def test_admins_use_their_teams_stores(sdk, library):
    store, attached = library
    admin = sdk["admin"]
    assert store.id in store_ids(admin)
    assert search(admin, store.id, EN_PAGE1_QUESTION)[0].file_id == attached["en_fpdf.pdf"].id
    own = new_store(admin)
    vf = upload(admin, own.id, "fire.docx", docx(FIRE_DOCX))
    assert vf.status == "completed"
    assert admin.vector_stores.delete(own.id).deleted


def test_auditors_may_not_post_or_delete(sdk, library):
    store, attached = library
    auditor = sdk["auditor"]
    en = attached["en_fpdf.pdf"]
    calls = [
        lambda: auditor.vector_stores.create(name="auditor's"),
        lambda: auditor.files.create(file=("a.txt", b"Auditors may not upload.\n"), purpose="assistants"),
        lambda: auditor.vector_stores.files.create(vector_store_id=store.id, file_id=en.id),
        lambda: auditor.vector_stores.search(vector_store_id=store.id, query=EN_PAGE1_QUESTION),
        lambda: auditor.vector_stores.files.delete(en.id, vector_store_id=store.id),
        lambda: auditor.vector_stores.delete(store.id),
        lambda: auditor.files.delete(en.id),
    ]
    for call in calls:
        with pytest.raises(openai.PermissionDeniedError) as e:
            call()
        error_shape(e.value)
    member = sdk["member"]
    assert member.vector_stores.retrieve(store.id).file_counts.total == 3
    assert member.files.retrieve(en.id).id == en.id


def test_a_bad_key_is_401(gw, library):
    store, _ = library
    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key="sk-nope", max_retries=0, timeout=20)
    with pytest.raises(openai.AuthenticationError):
        client.vector_stores.list()
    with pytest.raises(openai.AuthenticationError):
        client.vector_stores.search(vector_store_id=store.id, query=EN_PAGE1_QUESTION)


# --- hostile files and bad requests ------------------------------------------------------------

@pytest.mark.parametrize("filename, build", [
    ("encrypted.pdf", lambda: fixture("encrypted.pdf")),
    ("bomb.docx", zip_bomb_docx),
    ("pixel.png", png),
], ids=["encrypted-pdf", "zip-bomb-docx", "png"])
def test_a_hostile_file_is_refused_and_the_store_stays_usable(sdk, filename, build):
    """Attaching answers at once (issue 44: the queue reads the file), so a file that cannot be
    read ends `failed` with `last_error` (OpenAI's codes, our message) as the SDK's poll sees it;
    it is never searched, and the store's other files stay usable."""
    client = sdk["member"]
    store = new_store(client)
    good = upload(client, store.id, "fire.docx", docx(FIRE_DOCX))
    started = time.monotonic()
    bad = upload(client, store.id, filename, build())
    assert time.monotonic() - started < 30
    assert bad.status == "failed", bad
    assert bad.last_error is not None and bad.last_error.message.strip(), bad
    assert bad.last_error.code in ("invalid_file", "unsupported_file"), bad.last_error
    assert client.vector_stores.files.retrieve(bad.id, vector_store_id=store.id).status == "failed"
    assert sorted(attached_ids(client, store.id)) == sorted([good.id, bad.id])
    assert [f.id for f in client.vector_stores.files.list(vector_store_id=store.id, filter="completed")] == [good.id]
    assert [f.id for f in client.vector_stores.files.list(vector_store_id=store.id, filter="failed")] == [bad.id]
    got = client.vector_stores.retrieve(store.id)
    assert got.status == "completed", got
    assert (got.file_counts.total, got.file_counts.completed, got.file_counts.failed) == (2, 1, 1), got
    assert got.usage_bytes == len(docx(FIRE_DOCX)), got
    [top, *_] = search(client, store.id, FIRE_QUESTION)
    assert top.file_id == good.id
    assert bad.id not in file_ids(search(client, store.id, FIRE_QUESTION, max_num_results=50))
    later = upload(client, store.id, "notes.txt", f"The {marker()} canteen opens at eight.\n".encode())
    assert later.status == "completed"
    assert len(list(client.vector_stores.files.list(vector_store_id=store.id, filter="completed"))) == 2
    # A failed file can be detached like any other.
    client.vector_stores.files.delete(bad.id, vector_store_id=store.id)
    assert client.vector_stores.retrieve(store.id).file_counts.failed == 0


def test_an_unknown_vector_store_is_404(sdk):
    client = sdk["member"]
    for vs in ("vs_doesnotexist", "vs_" + "0" * 32):
        for call in (lambda: client.vector_stores.retrieve(vs),
                     lambda: client.vector_stores.delete(vs),
                     lambda: client.vector_stores.search(vector_store_id=vs, query=EN_PAGE1_QUESTION),
                     lambda: client.vector_stores.files.list(vector_store_id=vs),
                     lambda: client.vector_stores.files.create(vector_store_id=vs, file_id="file-nope")):
            with pytest.raises(openai.NotFoundError) as e:
                call()
            error_shape(e.value)


def test_an_unknown_file_is_404(sdk, library):
    store, _ = library
    client = sdk["member"]
    for call in (lambda: client.files.retrieve("file-doesnotexist"),
                 lambda: client.files.delete("file-doesnotexist"),
                 lambda: client.vector_stores.files.create(vector_store_id=store.id, file_id="file-doesnotexist"),
                 lambda: client.vector_stores.files.retrieve("file-doesnotexist", vector_store_id=store.id),
                 lambda: client.vector_stores.files.delete("file-doesnotexist", vector_store_id=store.id)):
        with pytest.raises(openai.NotFoundError) as e:
            call()
        error_shape(e.value)


BAD_SEARCHES = [
    ("max-0", dict(max_num_results=0)),
    ("max-51", dict(max_num_results=51)),
    ("max-negative", dict(max_num_results=-1)),
    ("filter-gt", dict(filters={"type": "gt", "key": "year", "value": 2020})),
    ("filter-or", dict(filters={"type": "or", "filters": [{"type": "eq", "key": "lang", "value": "en"}]})),
    ("filter-and-of-gt", dict(filters={"type": "and", "filters": [{"type": "gt", "key": "year", "value": 1}]})),
    ("filter-eq-no-key", dict(filters={"type": "eq", "value": "en"})),
    ("threshold-1.5", dict(ranking_options={"score_threshold": 1.5})),
    ("threshold-negative", dict(ranking_options={"score_threshold": -0.1})),
    ("unknown-field", dict(extra_body={"colour": "red"})),
    ("unknown-ranking-field", dict(ranking_options={"boost": 2})),
]


@pytest.mark.parametrize("kwargs", [b[1] for b in BAD_SEARCHES], ids=[b[0] for b in BAD_SEARCHES])
def test_a_bad_search_is_400(sdk, library, kwargs):
    store, _ = library
    with pytest.raises(openai.BadRequestError) as e:
        sdk["member"].vector_stores.search(vector_store_id=store.id, query=EN_PAGE1_QUESTION, **kwargs)
    assert error_shape(e.value)["type"] == "invalid_request_error"


@pytest.mark.parametrize("query", ["", "x" * 8001, [], [1, 2]], ids=["empty", "8001-chars", "empty-list", "numbers"])
def test_a_bad_search_query_is_400(sdk, library, query):
    store, _ = library
    with pytest.raises(openai.BadRequestError):
        sdk["member"].vector_stores.search(vector_store_id=store.id, query=query)


def test_bad_create_and_attach_bodies_are_400(sdk, http, library):
    store, attached = library
    client = sdk["member"]
    before = store_ids(client)
    for kwargs in (dict(name="x", extra_body={"colour": "red"}), dict(name="x", metadata={"nested": {"a": 1}})):
        with pytest.raises(openai.BadRequestError) as e:
            client.vector_stores.create(**kwargs)
        error_shape(e.value)
    assert store_ids(client) == before
    file = client.files.create(file=("notes.txt", f"The {marker()} notes.\n".encode()), purpose="assistants")
    for kwargs in (dict(extra_body={"colour": "red"}), dict(attributes={"nested": {"a": 1}}),
                   dict(attributes={f"k{i}": i for i in range(17)})):
        with pytest.raises(openai.BadRequestError) as e:
            client.vector_stores.files.create(vector_store_id=store.id, file_id=file.id, **kwargs)
        error_shape(e.value)
    assert file.id not in attached_ids(client, store.id)
    r = http["member"].post(f"/v1/vector_stores/{store.id}/search", content=b'{"query": "records',
                            headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    r = http["member"].post(f"/v1/vector_stores/{store.id}/files", json={})
    assert r.status_code == 400, r.text


def test_a_refused_create_leaves_no_store_behind(sdk):
    """`file_ids` that cannot all be attached (one does not exist) refuse the create; the caller
    gets no id, so no store may be left behind (half made, listed, holding the files that did
    attach)."""
    client = sdk["member"]
    good = client.files.create(file=("notes.txt", f"The {marker()} canteen opens at eight.\n".encode()),
                               purpose="assistants")
    before = store_ids(client)
    with pytest.raises(openai.APIStatusError) as e:
        client.vector_stores.create(name="half made", file_ids=[good.id, "file-doesnotexist"])
    assert e.value.status_code in (400, 404), e.value.response.text
    error_shape(e.value)
    after = {s.id: (s.name, s.file_counts.total) for s in client.vector_stores.list() if s.id not in before}
    assert after == {}, f"left behind: {after}"


def test_a_create_with_an_unreadable_file_keeps_it_failed(sdk):
    """A file that exists but cannot be read (an encrypted PDF) is attached, then ends `failed`
    with `last_error` once the queue has read it (as OpenAI's API does); the other file of the
    same create completes and is searched."""
    client = sdk["member"]
    good = client.files.create(file=("fire.docx", docx(FIRE_DOCX)), purpose="assistants")
    bad = client.files.create(file=("encrypted.pdf", fixture("encrypted.pdf")), purpose="assistants")
    store = client.vector_stores.create(name="one unreadable", file_ids=[good.id, bad.id])
    store = settled(client, store.id)
    assert (store.file_counts.total, store.file_counts.completed, store.file_counts.failed) == (2, 1, 1), store
    failed = client.vector_stores.files.retrieve(bad.id, vector_store_id=store.id)
    assert failed.status == "failed" and failed.last_error.code == "invalid_file", failed
    assert "encrypt" in failed.last_error.message.lower(), failed.last_error
    [top, *_] = search(client, store.id, FIRE_QUESTION)
    assert top.file_id == good.id


@pytest.mark.parametrize("attributes", [
    {"file_id": "INV-2026-001", "dept": "finance", "pages": 3, "final": True},
    {f"k{i}": f"v{i}" for i in range(16)},
], ids=["a-key-named-file_id", "sixteen-keys"])
def test_attributes_come_back_as_given(sdk, attributes):
    """Attributes are the caller's: up to 16 keys (OpenAI's limit), any names, returned as given
    and filterable."""
    client = sdk["member"]
    store = new_store(client)
    vf = upload(client, store.id, "invoice.txt", f"Invoice {marker()} is due in thirty days.\n".encode(),
                attributes=attributes)
    assert vf.attributes == attributes
    assert client.vector_stores.files.retrieve(vf.id, vector_store_id=store.id).attributes == attributes
    key, value = next(iter(attributes.items()))
    [hit] = search(client, store.id, "When is the invoice due?", filters={"type": "eq", "key": key, "value": value})
    assert hit.file_id == vf.id and hit.attributes == attributes


def test_uploading_the_same_file_twice_with_the_sdk_works(sdk):
    """A script run twice uploads the same PDF again (a new file id, the same bytes): the SDK's
    `upload_and_poll` must not fail on its own poll."""
    client = sdk["member"]
    store = new_store(client)
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        first = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=f)
    with open(FIXTURES / "en_fpdf.pdf", "rb") as f:
        second = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=f)
    assert second.id != first.id and second.status == "completed"
    assert client.vector_stores.files.retrieve(second.id, vector_store_id=store.id).status == "completed"
    assert second.id in attached_ids(client, store.id)
