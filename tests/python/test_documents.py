"""Document ingestion and retrieval (issue 15) through the real binary, as a user meets it:
multipart uploads of PDF, DOCX, text and Markdown into collections; the document records (list,
get, delete, deduplication, team scoping, roles); hostile files (encrypted, scanned, truncated,
mislabelled, zip bomb, 10,000-deep XML, random bytes, too large) refused quickly without harming
the gateway or leaving half a document behind; `POST /v1/rag/query` with citations (page and
paragraph provenance, confidence, filters, top_k, generation through the chat route); the PII
guardrail on uploads and queries; the journal and usage rows; persistence across a restart; and
the built-in embedding model on `/v1/embeddings`.

Every test uses its own collection (`new_collection()`), so tests do not depend on each other's
documents or on their order. Servers are started once per module."""

from __future__ import annotations

import hashlib
import io
import json
import math
import random
import struct
import time
import uuid
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

import harness

FIXTURES = harness.REPO / "host" / "documents" / "tests" / "fixtures"
E5 = "multilingual-e5-small-q4"
HOSTILE_DEADLINE_S = 30.0
ERROR_FIELDS = {"message", "type", "param", "code"}
DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MIME = {".pdf": "application/pdf", ".docx": DOCX_MIME, ".txt": "text/plain", ".md": "text/markdown",
        ".png": "image/png", ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}

# Words that really occur in the fixtures (their .expected.txt; pages separated by a form feed).
EN_PAGE1_QUESTION = "How long must customer records be kept?"  # page 1: "... kept for ten years."
EN_PAGE2_QUESTION = "Within how many business days does the bank report suspicious transactions?"  # page 2
AR_PAGE1_QUESTION = "ما هي مدة الاحتفاظ بسجلات العملاء؟"  # page 1: "يجب الاحتفاظ بسجلات العملاء لمدة عشر سنوات."
AR_PAGE2_QUESTION = "متى يلتزم البنك بالإفصاح عن المعاملات المشبوهة؟"  # page 2
UNANSWERABLE = "What is the boiling point of liquid nitrogen in a pressure cooker recipe?"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def new_collection() -> str:
    return "c-" + uuid.uuid4().hex[:16]


def marker() -> str:
    """A word that occurs nowhere else (to find one test's text in logs, files and upstream requests)."""
    return "mk" + uuid.uuid4().hex[:12]


# --- files built here --------------------------------------------------------------------------

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    '</Types>')
RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>')
DOC_HEAD = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W_NS}"><w:body>'
DOC_TAIL = "</w:body></w:document>"


def _docx_package(write_document) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", CONTENT_TYPES)
        z.writestr("_rels/.rels", RELS)
        with z.open("word/document.xml", "w") as f:
            write_document(f)
    return buf.getvalue()


def docx(paragraphs: list[str]) -> bytes:
    """A well-formed minimal DOCX: the control for the hostile ones built the same way."""
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    return _docx_package(lambda f: f.write((DOC_HEAD + body + DOC_TAIL).encode()))


def zip_bomb_docx(inflated: int = 310 * 1024 * 1024) -> bytes:
    """A DOCX whose word/document.xml inflates to > 300 MB at a ratio near 1000:1 (≈ 300 KB sent)."""
    def write(f):
        f.write((DOC_HEAD + "<w:p><w:r><w:t>").encode())
        chunk = b"a" * (1 << 20)
        for _ in range(inflated // len(chunk)):
            f.write(chunk)
        f.write(("</w:t></w:r></w:p>" + DOC_TAIL).encode())
    data = _docx_package(write)
    assert inflated / len(data) > 100, "the bomb must be over the 100:1 ratio"
    return data


def deep_docx(depth: int = 10_000) -> bytes:
    body = "<w:p><w:r><w:t>deep</w:t></w:r></w:p>" + "<w:sdt>" * depth + "</w:sdt>" * depth
    return _docx_package(lambda f: f.write((DOC_HEAD + body + DOC_TAIL).encode()))


def png() -> bytes:
    """A real 1×1 PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def xlsx() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", CONTENT_TYPES.replace("word/document", "xl/workbook"))
        z.writestr("xl/workbook.xml", '<?xml version="1.0"?><workbook/>')
    return buf.getvalue()


def long_text(paragraphs: int = 24) -> str:
    """Plain text long enough for many ≈ 400-token chunks, each paragraph about its own topic."""
    topics = ["harbour cranes", "orchard irrigation", "railway signalling", "bakery ovens", "library lending",
              "glacier monitoring", "beehive inspection", "tram maintenance", "vineyard pruning",
              "satellite uplinks", "textile dyeing", "lighthouse lamps"]
    out = []
    for i in range(paragraphs):
        topic = topics[i % len(topics)]
        sentences = [f"Section {i + 1} explains {topic} in detail."]
        sentences += [f"Step {j + 1} of the {topic} routine requires checking gauge {i * 10 + j} "
                      f"and writing its reading into the {topic} register before the shift ends."
                      for j in range(8)]
        out.append(" ".join(sentences))
    return "\n\n".join(out) + "\n"


# --- the API as one key sees it ----------------------------------------------------------------

class Docs:
    """The documents and retrieval API through plain HTTP, authenticated as one key."""

    def __init__(self, gw: harness.Proc, key: str):
        self.gw = gw
        self.http = httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)

    def close(self):
        self.http.close()

    def upload(self, filename: str, data: bytes, collection: str | None = None, metadata=None,
               content_type: str | None = None) -> httpx.Response:
        fields = {}
        if collection is not None:
            fields["collection"] = collection
        if metadata is not None:
            fields["metadata"] = metadata if isinstance(metadata, str) else json.dumps(metadata)
        ctype = content_type or MIME.get(Path(filename).suffix, "application/octet-stream")
        # Waiting for ingestion the documented way (`?wait=true`): answered as a synchronous
        # upload (201 with the document, or the error it failed with). The asynchronous states
        # are test_ingestion.py's.
        return self.http.post("/v1/documents/upload", params={"wait": "true"},
                              files={"file": (filename, data, ctype)}, data=fields)

    def ingest(self, filename: str, data: bytes, collection: str | None = None, metadata=None) -> dict:
        r = self.upload(filename, data, collection, metadata)
        assert r.status_code == 201, (filename, r.status_code, r.text[:500])
        return r.json()

    def list(self, **params) -> httpx.Response:
        return self.http.get("/v1/documents", params=params)

    def listed_ids(self, collection: str) -> list[str]:
        r = self.list(collection=collection, limit=100)
        assert r.status_code == 200, r.text
        return [d["id"] for d in r.json()["data"]]

    def get(self, doc_id: str) -> httpx.Response:
        return self.http.get(f"/v1/documents/{doc_id}")

    def delete(self, doc_id: str) -> httpx.Response:
        return self.http.delete(f"/v1/documents/{doc_id}")

    def query(self, query: str, **body) -> httpx.Response:
        return self.http.post("/v1/rag/query", json={"query": query, **body})

    def ask(self, query: str, **body) -> dict:
        """A rag query that must succeed; its result checked against the documented shape."""
        r = self.query(query, **body)
        assert r.status_code == 200, (r.status_code, r.text[:500])
        result = r.json()
        assert result["object"] == "rag.result"
        assert result["query"] == query
        assert result["collection"] == (body.get("collection") or None)
        assert result["model"] == E5
        assert isinstance(result["confidence"], float | int) and 0.0 <= result["confidence"] <= 1.0, result
        assert isinstance(result["citations"], list)
        for c in result["citations"]:
            assert {"document_id", "filename", "page", "paragraph", "chunk_id", "text", "score",
                    "confidence"} <= set(c), c
            assert c["document_id"].startswith("doc_")
            assert isinstance(c["chunk_id"], str) and c["chunk_id"]
            assert isinstance(c["paragraph"], int) and not isinstance(c["paragraph"], bool)
            assert c["page"] is None or (isinstance(c["page"], int) and c["page"] >= 1), c
            assert isinstance(c["text"], str) and c["text"].strip()
            assert isinstance(c["score"], float | int)
            assert 0.0 <= c["confidence"] <= 1.0, c
        scores = [c["score"] for c in result["citations"]]
        assert scores == sorted(scores, reverse=True), f"citations best first: {scores}"
        chunk_ids = [c["chunk_id"] for c in result["citations"]]
        assert len(set(chunk_ids)) == len(chunk_ids), "no chunk cited twice"
        return result


def error_of(r: httpx.Response, *statuses: int) -> dict:
    """The OpenAI error shape with one of `statuses` and a message a person can act on."""
    assert r.status_code in statuses, (r.status_code, r.text[:500])
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_FIELDS, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"].strip(), body
    return body["error"]


def check_record(rec: dict, filename: str, data: bytes, collection: str, kind: str,
                 pages: int | None = None, metadata: dict | None = None) -> None:
    assert rec["id"].startswith("doc_"), rec
    assert rec["object"] == "document"
    assert rec["filename"] == filename
    assert rec["collection"] == collection
    assert rec["kind"] == kind
    assert rec["bytes"] == len(data)
    assert rec["sha256"] == hashlib.sha256(data).hexdigest()
    if kind == "pdf":
        assert isinstance(rec["pages"], int) and rec["pages"] >= 1, rec
        if pages is not None:
            assert rec["pages"] == pages, rec
    else:
        assert rec["pages"] is None, rec
    assert isinstance(rec["chunks"], int) and rec["chunks"] >= 1, rec
    assert rec["status"] == "completed"
    assert rec["metadata"] == (metadata or {})
    assert rec["model"] == E5
    assert isinstance(rec["created_at"], int) and abs(rec["created_at"] - time.time()) < 600, rec


def cited_ids(result: dict) -> set[str]:
    return {c["document_id"] for c in result["citations"]}


# --- servers -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def team_keys():
    """Keys of two teams: (secrets by name, the config's (role, hash, team) by name)."""
    names = {"admin": ("admin", "t1"), "member": ("member", "t1"), "auditor": ("auditor", "t1"),
             "member2": ("member", "t2"), "auditor2": ("auditor", "t2")}
    secrets, config = {}, {}
    for name, (role, team) in names.items():
        secret, hash_ = harness.new_key()
        secrets[name] = secret
        config[name] = (role, hash_, team)
    return secrets, config


def _start(sim, config_keys, directory: Path, extra: str = harness.UNLIMITED) -> harness.Proc:
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=5000, stream_idle_timeout_ms=5000),
        config_keys, extra=extra)
    return harness.start_gateway(config, directory)


@pytest.fixture(scope="module")
def gw(sim, team_keys, tmp_path_factory):
    """The module's gateway (no guardrail, journal on by default); yields (process, its directory)."""
    directory = tmp_path_factory.mktemp("docs-gw")
    p = _start(sim, team_keys[1], directory)
    yield p, directory
    p.kill()


@pytest.fixture(scope="module")
def api(gw, team_keys):
    """`api["member"]` etc.: the documents API of the module's gateway as each key sees it."""
    clients = {name: Docs(gw[0], secret) for name, secret in team_keys[0].items()}
    yield clients
    for c in clients.values():
        c.close()


def _guarded(sim, team_keys, tmp_path_factory, settings: dict):
    directory = tmp_path_factory.mktemp("docs-guard")
    extra = harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(json.dumps(settings))}\n"
    return _start(sim, team_keys[1], directory, extra=extra)


@pytest.fixture(scope="module")
def pii_block(sim, team_keys, tmp_path_factory):
    """A gateway whose PII guardrail blocks e-mail addresses and card numbers (and redacts the
    rest); yields its member's API (with `.admin`, the admin's)."""
    p = _guarded(sim, team_keys, tmp_path_factory,
                 {"default": "redact", "entities": {"email": "block", "credit_card": "block"}})
    docs = Docs(p, team_keys[0]["member"])
    docs.admin = Docs(p, team_keys[0]["admin"])
    yield docs
    docs.admin.close()
    docs.close()
    p.kill()


@pytest.fixture(scope="module")
def pii_redact(sim, team_keys, tmp_path_factory):
    """A gateway whose PII guardrail redacts everything."""
    p = _guarded(sim, team_keys, tmp_path_factory, {"default": "redact"})
    docs = Docs(p, team_keys[0]["member"])
    yield docs
    docs.close()
    p.kill()


def journal_status(admin: Docs, r: httpx.Response) -> tuple[str, str]:
    """(action, status) of the one journal entry of the request answered by `r` (a queued
    upload's completion is an entry of its own under the same request id, issue 44)."""
    found = admin.http.post("/v1/activity/logs", json={"request_id": r.headers["x-audit-trace-id"]})
    assert found.status_code == 200, found.text
    completions = ("documents.ingest", "vector_stores.files.ingest")
    [entry] = [e for e in found.json()["data"] if e["action"] not in completions]
    return entry["action"], entry["status"]


def gateway_is_up(docs: Docs) -> None:
    assert httpx.get(f"{docs.gw.url}/healthz", timeout=10).status_code == 200
    assert docs.list(limit=1).status_code == 200


# --- upload and the document record ------------------------------------------------------------

def test_upload_a_pdf_returns_a_ready_record_that_get_returns_too(api):
    data, c = fixture("en_fpdf.pdf"), new_collection()
    meta = {"department": "legal", "year": 2026, "public": True}
    r = api["member"].upload("en_fpdf.pdf", data, collection=c, metadata=meta)
    assert r.status_code == 201, r.text
    rec = r.json()
    check_record(rec, "en_fpdf.pdf", data, c, "pdf", pages=2, metadata=meta)
    assert rec["chunks"] >= 2, "a chunk never spans two pages"
    got = api["member"].get(rec["id"])
    assert got.status_code == 200 and got.json() == rec
    assert api["member"].listed_ids(c) == [rec["id"]]


@pytest.mark.parametrize("filename, build, kind, pages", [
    ("ar_harfbuzz.pdf", lambda: fixture("ar_harfbuzz.pdf"), "pdf", 2),
    ("ar_libreoffice.pdf", lambda: fixture("ar_libreoffice.pdf"), "pdf", 1),
    ("dense_mixed.pdf", lambda: fixture("dense_mixed.pdf"), "pdf", 2),
    ("ar_libreoffice.docx", lambda: fixture("ar_libreoffice.docx"), "docx", None),
    ("built-here.docx", lambda: docx(["Fire doors stay closed at all times.", "Drills happen monthly."]),
     "docx", None),
    ("notes.txt", lambda: "Visitors sign the register at the front desk.\n".encode(), "text", None),
    ("ملاحظات.txt", lambda: "يوقّع الزوار في السجل عند مكتب الاستقبال.\n".encode(), "text", None),
    ("README.md", lambda: b"# Parking\n\nStaff park on level two.\n\n- Visitors park on level one.\n",
     "markdown", None),
], ids=["pdf-ar-harfbuzz", "pdf-ar-libreoffice", "pdf-dense", "docx-libreoffice", "docx-built", "txt",
        "txt-arabic-name", "md"])
def test_each_supported_kind_is_ingested(api, filename, build, kind, pages):
    data, c = build(), new_collection()
    rec = api["member"].ingest(filename, data, collection=c)
    check_record(rec, filename, data, c, kind, pages=pages)


def test_the_collection_defaults_to_default(api):
    m = marker()
    data = f"The {m} archive is kept in the basement vault.\n".encode()
    rec = api["member"].ingest(f"{m}.txt", data)
    try:
        check_record(rec, f"{m}.txt", data, "default", "text")
        result = api["member"].ask(f"Where is the {m} archive kept?", filters={"document_ids": [rec["id"]]})
        assert cited_ids(result) == {rec["id"]}
    finally:
        assert api["member"].delete(rec["id"]).status_code == 200


def test_a_query_without_a_collection_searches_all_the_teams_collections(api):
    """Issue 49, bug 5: with the collection left out or empty (the console's "Try a retrieval
    query" form, empty), a query searches every collection of the caller's team (it searched
    `default` and found nothing); naming one still narrows to it; other teams' stay out."""
    m = marker()
    here, there = new_collection(), new_collection()
    a = api["member"].ingest(f"{m}-a.txt", f"The {m} ledger is kept in the north tower.\n".encode(), collection=here)
    b = api["member"].ingest(f"{m}-b.txt", f"The {m} seal is kept in the south tower.\n".encode(), collection=there)
    other = api["member2"].ingest(f"{m}-c.txt", f"The {m} crown is kept in the east tower.\n".encode(),
                                  collection=here)
    question = f"Where are the {m} ledger and the {m} seal kept?"
    for body in ({}, {"collection": ""}):
        cited = cited_ids(api["member"].ask(question, top_k=10, **body))
        assert {a["id"], b["id"]} <= cited and other["id"] not in cited, (body, cited)
    assert cited_ids(api["member"].ask(question, top_k=10, collection=here)) & {b["id"], other["id"]} == set()
    assert not cited_ids(api["member"].ask(question, top_k=10, collection="default")) & {a["id"], b["id"]}


def test_admin_may_upload_too(api):
    rec = api["admin"].ingest("admin.txt", b"Admins rotate the backup tapes weekly.\n", collection=new_collection())
    assert rec["status"] == "completed"


def test_same_bytes_again_is_the_same_document_but_not_across_collections_or_teams(api):
    data, c = fixture("en_fpdf.pdf"), new_collection()
    first = api["member"].upload("en_fpdf.pdf", data, collection=c)
    assert first.status_code == 201, first.text
    again = api["member"].upload("en_fpdf.pdf", data, collection=c)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    # Under another name, still the same bytes: the same document.
    renamed = api["member"].upload("copy-of-policy.pdf", data, collection=c)
    assert renamed.status_code == 200 and renamed.json()["id"] == first.json()["id"], renamed.text
    assert api["member"].listed_ids(c) == [first.json()["id"]]

    elsewhere = api["member"].upload("en_fpdf.pdf", data, collection=new_collection())
    assert elsewhere.status_code == 201 and elsewhere.json()["id"] != first.json()["id"], elsewhere.text

    theirs = api["member2"].upload("en_fpdf.pdf", data, collection=c)
    assert theirs.status_code == 201, theirs.text
    assert theirs.json()["id"] != first.json()["id"]
    assert api["member2"].listed_ids(c) == [theirs.json()["id"]]
    assert api["member"].listed_ids(c) == [first.json()["id"]]


def test_concurrent_uploads_of_the_same_bytes_make_one_document(api):
    data, c = f"Double-clicked upload {marker()}: the cafeteria closes at three.\n".encode(), new_collection()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: api["member"].upload("twice.txt", data, collection=c), range(4)))
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 200, 200, 201], [(r.status_code, r.text[:200]) for r in results]
    assert len({r.json()["id"] for r in results}) == 1
    assert len(api["member"].listed_ids(c)) == 1


# --- list, get, delete -------------------------------------------------------------------------

def test_list_is_newest_first_and_pages_with_after(api):
    c = new_collection()
    ids = [api["member"].ingest(f"n{i}.txt", f"Note {i}: the {marker()} meeting moved.\n".encode(),
                                collection=c)["id"] for i in range(3)]
    r = api["member"].list(collection=c)
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["object"] == "list"
    assert [d["id"] for d in page["data"]] == ids[::-1], "newest first"
    assert all(d["object"] == "document" and d["collection"] == c for d in page["data"])
    assert (page["first_id"], page["last_id"], page["has_more"]) == (ids[2], ids[0], False)

    first = api["member"].list(collection=c, limit=2).json()
    assert [d["id"] for d in first["data"]] == [ids[2], ids[1]]
    assert (first["first_id"], first["last_id"], first["has_more"]) == (ids[2], ids[1], True)
    rest = api["member"].list(collection=c, limit=2, after=first["last_id"]).json()
    assert [d["id"] for d in rest["data"]] == [ids[0]]
    assert rest["has_more"] is False and rest["first_id"] == rest["last_id"] == ids[0]


def test_list_of_an_empty_collection_is_an_empty_list(api):
    page = api["member"].list(collection=new_collection())
    assert page.status_code == 200, page.text
    assert page.json()["object"] == "list" and page.json()["data"] == [] and page.json()["has_more"] is False


@pytest.mark.parametrize("limit", ["0", "101", "-1", "ten", "2.5"])
def test_a_bad_list_limit_is_400(api, limit):
    err = error_of(api["member"].list(limit=limit), 400)
    assert err["type"] == "invalid_request_error"


@pytest.mark.parametrize("limit", [1, 100])
def test_list_limits_at_the_bounds_are_accepted(api, limit):
    assert api["member"].list(limit=limit).status_code == 200


def test_get_of_an_unknown_or_another_teams_document_is_404(api):
    rec = api["member2"].ingest("t2.txt", f"Team two only: {marker()} rota.\n".encode(), collection=new_collection())
    for doc_id in (rec["id"], "doc_doesnotexist", "doc_" + "0" * 24):
        error_of(api["member"].get(doc_id), 404)
        error_of(api["auditor"].get(doc_id), 404)
    assert api["member2"].get(rec["id"]).status_code == 200


def test_delete_removes_the_document_everywhere_and_the_same_bytes_can_come_back(api):
    c = new_collection()
    data = fixture("en_fpdf.pdf")
    rec = api["member"].ingest("en_fpdf.pdf", data, collection=c)
    keep = api["member"].ingest("keep.txt", b"Customer records are archived in the east wing.\n", collection=c)
    assert rec["id"] in cited_ids(api["member"].ask(EN_PAGE1_QUESTION, collection=c, top_k=10))

    # Another team cannot delete it (nor learn that it exists).
    error_of(api["member2"].delete(rec["id"]), 404)
    assert api["member"].get(rec["id"]).status_code == 200

    r = api["member"].delete(rec["id"])
    assert r.status_code == 200, r.text
    assert r.json() == {"id": rec["id"], "object": "document.deleted", "deleted": True}
    error_of(api["member"].get(rec["id"]), 404)
    error_of(api["member"].delete(rec["id"]), 404)
    assert api["member"].listed_ids(c) == [keep["id"]]
    for question in (EN_PAGE1_QUESTION, EN_PAGE2_QUESTION, "Article 2: Disclosure"):
        result = api["member"].ask(question, collection=c, top_k=50)
        assert rec["id"] not in cited_ids(result), result
    assert api["member"].ask(EN_PAGE1_QUESTION, collection=c, filters={"document_ids": [rec["id"]]})["citations"] == []

    # Dedup does not resurrect a deleted document.
    back = api["member"].upload("en_fpdf.pdf", data, collection=c)
    assert back.status_code == 201, back.text
    assert api["member"].get(back.json()["id"]).status_code == 200
    assert back.json()["id"] in cited_ids(api["member"].ask(EN_PAGE1_QUESTION, collection=c, top_k=10))


def test_roles_auditors_read_only_and_keys_required(api, gw):
    c = new_collection()
    rec = api["member"].ingest("roles.txt", b"The night shift checks the boiler pressure hourly.\n", collection=c)
    auditor = api["auditor"]
    assert auditor.list(collection=c).status_code == 200
    assert [d["id"] for d in auditor.list(collection=c).json()["data"]] == [rec["id"]]
    assert auditor.get(rec["id"]).json() == rec
    for r in (auditor.upload("a.txt", b"Auditors may not upload.\n", collection=c),
              auditor.delete(rec["id"]),
              auditor.query("Who checks the boiler pressure?", collection=c)):
        assert error_of(r, 403)["type"] == "permission_error"
    assert api["member"].listed_ids(c) == [rec["id"]], "nothing uploaded or deleted by the auditor"
    for method, path in (("GET", "/v1/documents"), ("GET", f"/v1/documents/{rec['id']}"),
                         ("POST", "/v1/rag/query"), ("DELETE", f"/v1/documents/{rec['id']}"),
                         ("POST", "/v1/documents/upload")):
        r = httpx.request(method, f"{gw[0].url}{path}", headers={"Authorization": "Bearer sk-nope"}, timeout=10)
        assert r.status_code == 401, (method, path, r.status_code)


# --- upload validation -------------------------------------------------------------------------

@pytest.mark.parametrize("collection", ["has space", "x" * 65, "slash/inside", "ümlaut", "semi;colon"])
def test_a_bad_collection_name_is_400(api, collection):
    err = error_of(api["member"].upload("a.txt", f"{marker()} text.\n".encode(), collection=collection), 400)
    assert err["type"] == "invalid_request_error"


def test_collection_names_at_the_bounds_are_accepted(api):
    for c in ("A", "a" * 64, "Dept_2026.v1-final"):
        c = c if len(c) < 64 else c[:48] + uuid.uuid4().hex[:16]
        rec = api["member"].ingest("ok.txt", f"{marker()} is a fine collection name test.\n".encode(), collection=c)
        assert rec["collection"] == c
        assert api["member"].delete(rec["id"]).status_code == 200


@pytest.mark.parametrize("metadata", [
    "not json",
    "[1, 2]",
    '"a string"',
    json.dumps({f"k{i}": i for i in range(17)}),
    json.dumps({"nested": {"a": 1}}),
    json.dumps({"list": [1, 2]}),
    json.dumps({"nothing": None}),
], ids=["not-json", "array", "string", "17-keys", "nested", "list-value", "null-value"])
def test_bad_metadata_is_400(api, metadata):
    c = new_collection()
    err = error_of(api["member"].upload("a.txt", f"{marker()} text.\n".encode(), collection=c, metadata=metadata), 400)
    assert err["type"] == "invalid_request_error"
    assert api["member"].listed_ids(c) == []


def test_sixteen_metadata_keys_are_accepted(api):
    meta = {f"k{i}": (i if i % 3 == 0 else f"v{i}" if i % 3 == 1 else bool(i % 2)) for i in range(16)}
    rec = api["member"].ingest("meta.txt", f"{marker()} sixteen keys.\n".encode(), collection=new_collection(),
                               metadata=meta)
    assert rec["metadata"] == meta


def test_a_multipart_body_without_a_file_part_is_400(api):
    c = new_collection()
    r = api["member"].http.post("/v1/documents/upload", data={"collection": c},
                                files={"document": ("a.txt", b"wrong part name", "text/plain")})
    error_of(r, 400)
    assert api["member"].listed_ids(c) == []


@pytest.mark.parametrize("part", ["file", "collection", "metadata"])
def test_a_part_sent_twice_is_400_not_the_last_one_kept(api, part):
    """Issue 49, red team: two `file` parts in one upload silently kept the last."""
    c = new_collection()
    parts = [("file", ("a.txt", b"The first part says the vault is in the north.", "text/plain")),
             ("collection", (None, c)), ("metadata", (None, '{"k": "v"}'))]
    parts += [(part, ("b.txt", b"The second part says south.", "text/plain") if part == "file"
               else (None, c if part == "collection" else '{"k": "w"}'))]
    r = api["member"].http.post("/v1/documents/upload", files=parts)
    err = error_of(r, 400)
    assert err["param"] == part and "more than one" in err["message"], err
    assert api["member"].listed_ids(c) == []
    r = api["member"].http.post("/v1/files", files=[("file", ("a.txt", b"one", "text/plain")),
                                                    ("file", ("b.txt", b"two", "text/plain")),
                                                    ("purpose", (None, "assistants"))])
    assert error_of(r, 400)["param"] == "file"


def test_a_body_that_is_not_multipart_is_refused(api):
    r = api["member"].http.post("/v1/documents/upload", json={"file": "Customer records must be kept."})
    error_of(r, 400, 415)
    r = api["member"].http.post("/v1/documents/upload", content=fixture("en_fpdf.pdf"),
                                headers={"Content-Type": "application/pdf"})
    error_of(r, 400, 415)


@pytest.mark.parametrize("filename, build", [
    ("pixel.png", png),
    ("sheet.xlsx", xlsx),
    ("old.doc", lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)),
], ids=["png", "xlsx", "doc"])
def test_an_unsupported_file_type_is_415(api, filename, build):
    c = new_collection()
    err = error_of(api["member"].upload(filename, build(), collection=c), 415)
    assert err["code"] == "unsupported_file_type", err
    assert api["member"].listed_ids(c) == []


def test_a_too_large_upload_is_413_and_the_gateway_stays_up(api):
    c = new_collection()
    data = b"Customer records must be kept for ten years. " * (60 * 1024 * 1024 // 45)  # ≈ 60 MB
    started = time.monotonic()
    r = api["member"].upload("huge.txt", data, collection=c)
    assert time.monotonic() - started < HOSTILE_DEADLINE_S
    error_of(r, 413)
    gateway_is_up(api["member"])
    assert api["member"].listed_ids(c) == []


# --- hostile files -----------------------------------------------------------------------------

HOSTILE = [
    # (id, filename, bytes, accepted statuses, words one of which the message must contain)
    ("encrypted", "encrypted.pdf", lambda: fixture("encrypted.pdf"), (400, 422), ("encrypt",)),
    ("scanned", "scanned.pdf", lambda: fixture("scanned.pdf"), (400, 422), ("text", "ocr")),
    ("empty", "empty.pdf", lambda: b"", (400, 422), ()),
    ("png-named-pdf", "scan.pdf", png, (400, 415, 422), ()),
    ("zip-named-pdf", "report.pdf", lambda: docx(["A DOCX in disguise."]), (400, 415, 422), ()),
    ("pdf-named-docx", "report.docx", lambda: fixture("en_fpdf.pdf"), (400, 415, 422), ()),
    ("random-bytes-docx", "x.docx", lambda: random.Random(15).randbytes(8192), (400, 415, 422), ()),
    ("truncated-docx", "cut.docx", lambda: docx(["cut short"] * 50)[:300], (400, 415, 422), ()),
    ("zip-bomb-docx", "bomb.docx", zip_bomb_docx, (400, 413, 422), ()),
    ("deep-xml-docx", "deep.docx", deep_docx, (400, 422), ()),
    ("whitespace-txt", "blank.txt", lambda: b"   \n\n\t \n", (400, 422), ()),
    ("binary-txt", "notes.txt", lambda: b"\x00\x01\x02\xff\xfe" * 200, (400, 415, 422), ()),
]


@pytest.mark.parametrize("filename, build, statuses, words", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_hostile_upload_is_refused_quickly_and_leaves_nothing(api, filename, build, statuses, words):
    c = new_collection()
    data = build()
    started = time.monotonic()
    r = api["member"].upload(filename, data, collection=c)
    elapsed = time.monotonic() - started
    assert elapsed < HOSTILE_DEADLINE_S, f"answered after {elapsed:.1f} s"
    err = error_of(r, *statuses)
    if words:
        assert any(w in err["message"].lower() for w in words), err
    gateway_is_up(api["member"])
    assert api["member"].listed_ids(c) == [], "nothing half-ingested is listed"


def test_a_truncated_pdf_is_refused_or_recovered_but_never_garbage(api):
    """The first half of en_fpdf.pdf. pdfium rebuilds a damaged cross-reference table, so the
    documents crate allows either a refusal (400/422) or a document holding only real text."""
    c = new_collection()
    whole = fixture("en_fpdf.pdf")
    data = whole[:len(whole) // 2]
    started = time.monotonic()
    r = api["member"].upload("truncated.pdf", data, collection=c)
    assert time.monotonic() - started < HOSTILE_DEADLINE_S
    gateway_is_up(api["member"])
    if r.status_code == 201:
        rec = r.json()
        check_record(rec, "truncated.pdf", data, c, "pdf")
        cited = api["member"].ask(EN_PAGE1_QUESTION, collection=c, top_k=50)["citations"]
        assert cited and all("Records" in x["text"] or "Article" in x["text"] for x in cited), cited
    else:
        error_of(r, 400, 422)
        assert api["member"].listed_ids(c) == []


def test_hostile_uploads_in_parallel_do_not_stop_good_ones(api):
    """Two zip bombs and a 10,000-deep DOCX at once, while a good PDF is uploaded and queried."""
    c = new_collection()
    bomb, deep = zip_bomb_docx(), deep_docx()
    with ThreadPoolExecutor(4) as pool:
        bad = [pool.submit(api["member"].upload, f"bomb{i}.docx", bomb, c) for i in range(2)]
        bad.append(pool.submit(api["member"].upload, "deep.docx", deep, c))
        good = pool.submit(api["member"].upload, "en_fpdf.pdf", fixture("en_fpdf.pdf"), c)
        for f in bad:
            error_of(f.result(timeout=60), 400, 413, 422)
        assert good.result(timeout=60).status_code == 201
    assert len(api["member"].listed_ids(c)) == 1
    assert api["member"].ask(EN_PAGE1_QUESTION, collection=c)["citations"]


# --- retrieval ---------------------------------------------------------------------------------

def test_an_english_pdf_is_cited_with_the_page_that_answers(api):
    c = new_collection()
    rec = api["member"].ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c)
    for question, page, words in ((EN_PAGE1_QUESTION, 1, "ten years"), (EN_PAGE2_QUESTION, 2, "three business days")):
        result = api["member"].ask(question, collection=c)
        top = result["citations"][0]
        assert (top["document_id"], top["filename"], top["page"]) == (rec["id"], "en_fpdf.pdf", page), result
        assert words in top["text"], top
        assert top["paragraph"] >= 1


def test_an_arabic_question_cites_the_arabic_pdf_with_its_1_based_page(api):
    c = new_collection()
    rec = api["member"].ingest("ar_harfbuzz.pdf", fixture("ar_harfbuzz.pdf"), collection=c)
    for question, page, words in ((AR_PAGE1_QUESTION, 1, "عشر سنوات"), (AR_PAGE2_QUESTION, 2, "المعاملات المشبوهة")):
        result = api["member"].ask(question, collection=c)
        top = result["citations"][0]
        assert (top["document_id"], top["filename"], top["page"]) == (rec["id"], "ar_harfbuzz.pdf", page), result
        assert words in top["text"], top


def test_an_arabic_question_finds_the_arabic_pdf_among_english_documents(api):
    c = new_collection()
    ar = api["member"].ingest("ar_harfbuzz.pdf", fixture("ar_harfbuzz.pdf"), collection=c)
    api["member"].ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c)
    api["member"].ingest("parking.md", b"# Parking\n\nStaff park on level two of the garage.\n", collection=c)
    result = api["member"].ask(AR_PAGE1_QUESTION, collection=c, top_k=3)
    ar_cited = [x for x in result["citations"] if x["document_id"] == ar["id"]]
    assert ar_cited and ar_cited[0]["page"] == 1, result


def test_docx_and_text_citations_have_a_paragraph_and_no_page(api):
    c = new_collection()
    d = api["member"].ingest("ar_libreoffice.docx", fixture("ar_libreoffice.docx"), collection=c)
    t = api["member"].ingest("visitors.txt", b"Visitors sign the register at the front desk.\n\n"
                             b"Badges are returned at the end of the day.\n", collection=c)
    result = api["member"].ask("تحتفظ المؤسسة بالسجلات لمدة عشر سنوات", collection=c, top_k=10)
    docx_cites = [x for x in result["citations"] if x["document_id"] == d["id"]]
    assert docx_cites, result
    assert all(x["page"] is None and x["paragraph"] >= 1 and x["filename"] == "ar_libreoffice.docx"
               for x in docx_cites)
    assert "عشر سنوات" in docx_cites[0]["text"]
    result = api["member"].ask("Where do visitors sign the register?", collection=c, top_k=1)
    [top] = result["citations"]
    assert top["document_id"] == t["id"] and top["page"] is None and top["paragraph"] >= 1
    assert "register" in top["text"]


def test_an_unanswerable_question_has_lower_confidence_than_an_answerable_one(api):
    c = new_collection()
    api["member"].ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c)
    api["member"].ingest("ar_harfbuzz.pdf", fixture("ar_harfbuzz.pdf"), collection=c)
    answerable = api["member"].ask(EN_PAGE2_QUESTION, collection=c)
    unanswerable = api["member"].ask(UNANSWERABLE, collection=c)
    assert answerable["confidence"] > unanswerable["confidence"], (answerable["confidence"], unanswerable["confidence"])
    ar_answerable = api["member"].ask(AR_PAGE1_QUESTION, collection=c)
    assert ar_answerable["confidence"] > unanswerable["confidence"]


def test_top_k_defaults_to_5_and_bounds_the_citations(api):
    c = new_collection()
    rec = api["member"].ingest("manual.txt", long_text().encode(), collection=c)
    assert rec["chunks"] >= 6, rec
    question = "Which gauge is checked in the lighthouse lamps routine?"
    assert len(api["member"].ask(question, collection=c)["citations"]) == 5
    assert len(api["member"].ask(question, collection=c, top_k=1)["citations"]) == 1
    assert len(api["member"].ask(question, collection=c, top_k=2)["citations"]) == 2
    everything = api["member"].ask(question, collection=c, top_k=50)["citations"]
    assert len(everything) == min(50, rec["chunks"])
    top = everything[0]
    assert "lighthouse lamps" in top["text"], top


def test_min_confidence_drops_weaker_citations(api):
    c = new_collection()
    api["member"].ingest("manual.txt", long_text().encode(), collection=c)
    question = "Which gauge is checked in the beehive inspection routine?"
    all_of_them = api["member"].ask(question, collection=c, top_k=20, min_confidence=0)
    assert len(all_of_them["citations"]) > 1
    confidences = sorted(x["confidence"] for x in all_of_them["citations"])
    floor = (confidences[0] + confidences[-1]) / 2
    kept = api["member"].ask(question, collection=c, top_k=20, min_confidence=floor)["citations"]
    assert all(x["confidence"] >= floor for x in kept), kept
    assert len(kept) == sum(1 for x in confidences if x >= floor)
    assert api["member"].ask(UNANSWERABLE, collection=c, min_confidence=1.0)["citations"] == []


def test_filters_by_document_ids_and_metadata(api):
    c = new_collection()
    legal = api["member"].ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c,
                                 metadata={"dept": "legal", "year": 2026, "final": True})
    hr = api["member"].ingest("hr.txt", b"Customer records requests go to the HR office for ten years of history.\n",
                              collection=c, metadata={"dept": "hr", "year": 2026, "final": False})
    api["member"].ingest("ar_harfbuzz.pdf", fixture("ar_harfbuzz.pdf"), collection=c, metadata={"dept": "legal"})
    ask = lambda **f: cited_ids(api["member"].ask(EN_PAGE1_QUESTION, collection=c, top_k=20, filters=f))  # noqa: E731
    assert ask(document_ids=[hr["id"]]) == {hr["id"]}
    assert ask(document_ids=[hr["id"], legal["id"]]) == {hr["id"], legal["id"]}
    assert ask(metadata={"dept": "hr"}) == {hr["id"]}
    assert ask(metadata={"year": 2026}) == {hr["id"], legal["id"]}
    assert ask(metadata={"final": True}) == {legal["id"]}
    assert ask(metadata={"dept": "legal", "year": 2026}) == {legal["id"]}
    assert ask(metadata={"dept": "legal", "year": 2025}) == set()
    assert ask(document_ids=[legal["id"]], metadata={"dept": "hr"}) == set()
    assert ask(document_ids=["doc_doesnotexist"]) == set()


def test_queries_are_team_scoped(api):
    c = new_collection()
    data = fixture("en_fpdf.pdf")
    mine = api["member"].ingest("en_fpdf.pdf", data, collection=c)
    theirs_view = api["member2"].ask(EN_PAGE1_QUESTION, collection=c, top_k=50)
    assert mine["id"] not in cited_ids(theirs_view), theirs_view
    by_id = api["member2"].ask(EN_PAGE1_QUESTION, collection=c, filters={"document_ids": [mine["id"]]})
    assert by_id["citations"] == []
    theirs = api["member2"].ingest("en_fpdf.pdf", data, collection=c)
    assert cited_ids(api["member2"].ask(EN_PAGE1_QUESTION, collection=c, top_k=50)) == {theirs["id"]}
    assert cited_ids(api["member"].ask(EN_PAGE1_QUESTION, collection=c, top_k=50)) == {mine["id"]}
    # The default collection too.
    m = marker()
    private = api["member"].ingest(f"{m}.txt", f"The {m} vault code rotates on Mondays.\n".encode())
    try:
        seen = api["member2"].ask(f"When does the {m} vault code rotate?", top_k=50)
        assert private["id"] not in cited_ids(seen)
        assert all(m not in x["text"] for x in seen["citations"])
    finally:
        api["member"].delete(private["id"])


def test_an_unknown_collection_gives_no_citations(api):
    r = api["member"].query(EN_PAGE1_QUESTION, collection=new_collection())
    if r.status_code == 200:
        assert r.json()["citations"] == []
    else:
        error_of(r, 404)


@pytest.mark.parametrize("body", [
    {"query": ""},
    {"query": "x" * 8001},
    {"query": 42},
    {},
    {"query": "ok", "top_k": 0},
    {"query": "ok", "top_k": 51},
    {"query": "ok", "top_k": "five"},
    {"query": "ok", "min_confidence": -0.1},
    {"query": "ok", "min_confidence": 1.5},
    {"query": "ok", "collection": "has space"},
    {"query": "ok", "collection": "x" * 65},
    {"query": "ok", "filters": {"document_ids": "doc_1"}},
    {"query": "ok", "filters": {"owner": "me"}},
    {"query": "ok", "generate": "yes"},
    {"query": "ok", "colour": "red"},
], ids=["empty", "8001-chars", "not-a-string", "no-query", "top_k-0", "top_k-51", "top_k-string",
        "min_conf-negative", "min_conf-1.5", "bad-collection", "long-collection", "ids-not-list",
        "unknown-filter", "generate-string", "unknown-field"])
def test_a_bad_rag_query_is_400(api, body):
    r = api["member"].http.post("/v1/rag/query", json=body)
    err = error_of(r, 400)
    assert err["type"] == "invalid_request_error"


def test_rag_query_bounds_are_accepted_and_malformed_json_is_400(api):
    c = new_collection()
    api["member"].ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c)
    assert api["member"].ask("x" * 8000, collection=c, top_k=50, min_confidence=0)["query"] == "x" * 8000
    assert api["member"].ask("records", collection=c, top_k=1, min_confidence=1)
    # Characters, not bytes: 8,000 Arabic letters (16,000 bytes) are a valid query, 8,001 are not.
    assert api["member"].ask("ا" * 8000, collection=c)["query"] == "ا" * 8000
    error_of(api["member"].query("ا" * 8001, collection=c), 400)
    r = api["member"].http.post("/v1/rag/query", content=b'{"query": "records',
                                headers={"Content-Type": "application/json"})
    error_of(r, 400)


# --- generation through the chat route ---------------------------------------------------------

def _chat_requests_with(sim, text: str) -> list[dict]:
    def contents(req) -> str:
        out = []
        for m in req["body"].get("messages") or []:
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            out.append(c or "")
        return "\n".join(out)
    return [r for r in harness.sim_requests(sim)
            if r["path"].endswith("/chat/completions") and text in contents(r)]


def test_generate_answers_through_the_chat_route_with_numbered_sources(api, sim):
    c, m = new_collection(), marker()
    fact = f"The {m} lighthouse keeper logs storm warnings every forty minutes."
    rec = api["member"].ingest("keeper.txt", (fact + "\n").encode(), collection=c)
    without = api["member"].ask(f"How often does the {m} lighthouse keeper log storm warnings?", collection=c)
    assert without.get("answer") is None

    result = api["member"].ask(f"How often does the {m} lighthouse keeper log storm warnings?",
                               collection=c, generate=True)
    assert isinstance(result.get("answer"), str) and result["answer"].strip(), result
    assert isinstance(result.get("usage"), dict), result
    assert isinstance(result.get("answer_model"), str) and result["answer_model"], result
    cited = result["citations"][0]
    assert cited["document_id"] == rec["id"] and m in cited["text"]
    sent = _chat_requests_with(sim, cited["text"])
    assert sent, "the simulator received no chat request holding the cited chunk"
    prompt = json.dumps(sent[-1]["body"]["messages"], ensure_ascii=False)
    assert "[1]" in prompt, prompt

    # An explicit chat model is the one asked.
    result = api["member"].ask(f"Who logs storm warnings for the {m} lighthouse?", collection=c, generate=True,
                               model="allam-7b-instruct")
    assert result["answer_model"] == "allam-7b-instruct"
    assert result["model"] == E5
    assert _chat_requests_with(sim, cited["text"])[-1]["body"]["model"] == "allam-7b-instruct"


def test_generate_with_an_unknown_model_is_refused(api):
    c = new_collection()
    api["member"].ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c)
    r = api["member"].query(EN_PAGE1_QUESTION, collection=c, generate=True, model="gpt-17-ultra")
    error_of(r, 400, 404)


# --- the PII guardrail -------------------------------------------------------------------------

@pytest.mark.parametrize("filename, build, entity", [
    ("contact.txt", lambda m: f"For {m} questions write to nadia.k@example.com today.\n".encode(), "email"),
    ("card.txt", lambda m: f"The {m} deposit was paid with card 4111 1111 1111 1111.\n".encode(), "credit_card"),
    ("contact.md", lambda m: f"# {m}\n\nMail: omar@example.org\n".encode(), "email"),
    ("ar_libreoffice.docx", lambda m: fixture("ar_libreoffice.docx"), "email"),  # compliance@example.com
], ids=["email-txt", "card-txt", "email-md", "email-in-docx"])
def test_pii_in_an_upload_is_blocked_and_nothing_is_stored(pii_block, filename, build, entity):
    c = new_collection()
    r = pii_block.upload(filename, build(marker()), collection=c)
    err = error_of(r, 400)
    assert err["type"] == "guardrail_violation" and err["code"] == "pii_detected", err
    assert entity in err["message"]
    assert "example.com" not in err["message"] and "4111" not in err["message"]
    assert pii_block.listed_ids(c) == []
    assert journal_status(pii_block.admin, r) == ("documents.upload", "blocked")
    gateway_is_up(pii_block)


def test_pii_in_a_query_is_blocked(pii_block):
    c = new_collection()
    pii_block.ingest("policy.pdf", fixture("en_fpdf.pdf"), collection=c)
    r = pii_block.query("Which records does salem@example.sa keep?", collection=c)
    err = error_of(r, 400)
    assert err["type"] == "guardrail_violation" and err["code"] == "pii_detected", err
    assert journal_status(pii_block.admin, r) == ("rag.query", "blocked")
    assert "salem@example.sa" not in err["message"]
    assert pii_block.ask(EN_PAGE1_QUESTION, collection=c)["citations"], "a clean query on the same gateway works"


def test_redacted_uploads_are_cited_with_the_placeholder(pii_redact, sim):
    c, m = new_collection(), marker()
    data = f"Escalations about {m} go to the duty officer at omar.h@example.org before noon.\n".encode()
    rec = pii_redact.ingest("escalation.txt", data, collection=c)
    assert rec["sha256"] == hashlib.sha256(data).hexdigest()
    result = pii_redact.ask(f"Who handles escalations about {m} before noon?", collection=c, generate=True)
    [cited] = [x for x in result["citations"] if x["document_id"] == rec["id"]]
    assert "[EMAIL]" in cited["text"] and "omar.h@example.org" not in cited["text"], cited
    assert "omar.h@example.org" not in json.dumps(result, ensure_ascii=False)
    upstream = _chat_requests_with(sim, m)
    assert upstream and all("omar.h@example.org" not in json.dumps(r, ensure_ascii=False) for r in upstream)


# --- journal, usage, restart -------------------------------------------------------------------

def test_the_journal_records_uploads_and_queries_without_their_text(api, gw):
    _, directory = gw
    c, doc_word, query_word = new_collection(), marker(), marker()
    text = f"The {doc_word} sediment ledger is sampled every Tuesday by the harbour chemist."
    question = f"Who samples the {doc_word} sediment ledger ({query_word})?"
    up = api["member"].upload("ledger.txt", (text + "\n").encode(), collection=c)
    assert up.status_code == 201, up.text
    q = api["member"].query(question, collection=c)
    assert q.status_code == 200, q.text
    # The upload's entry and its completion's (issue 44: the queue's worker appends it when the
    # document is stored, under the upload's request id), the query's.
    for r, actions in ((up, ["documents.ingest", "documents.upload"]), (q, ["rag.query"])):
        request_id = r.headers["x-audit-trace-id"]
        for reader in ("admin", "auditor"):
            def logged():
                found = api[reader].http.post("/v1/activity/logs", json={"request_id": request_id})
                assert found.status_code == 200, found.text
                data = found.json()["data"]
                return data if len(data) == len(actions) else None
            entries = harness.wait_for(logged, what=f"the entries of {request_id}")
            assert sorted(e["action"] for e in entries) == actions, entries
            for e in entries:
                assert e["status"] == "success" and e["team_id"] == "t1", e
                dumped = json.dumps(e, ensure_ascii=False)
                assert doc_word not in dumped and query_word not in dumped and "sediment" not in dumped, e
    by_action = api["admin"].http.post("/v1/activity/logs", json={"action": "documents.upload", "limit": 1000})
    assert up.headers["x-audit-trace-id"] in {e["request_id"] for e in by_action.json()["data"]}
    files = [f for f in harness.journal_dir(directory).rglob("*") if f.is_file()]
    assert files, "the journal has files"
    for f in files:
        raw = f.read_bytes()
        for secret in (doc_word, query_word, text, question):
            assert secret.encode() not in raw, (f.name, secret)


def test_usage_has_rows_for_the_built_in_embedding_model(api):
    c = new_collection()
    api["member"].ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c)
    api["member"].ask(EN_PAGE1_QUESTION, collection=c)

    def rows():
        r = api["admin"].http.get("/v1/admin/usage", params={"model": E5})
        assert r.status_code == 200, r.text
        return r.json()["data"]
    found = harness.wait_for(rows, timeout=15, interval=0.2, what="usage rows for the embedding model")
    assert all(row["model"] == E5 for row in found), found


def test_documents_survive_a_restart(sim, team_keys, tmp_path):
    secrets, config_keys = team_keys
    c = new_collection()
    first = _start(sim, config_keys, tmp_path)
    try:
        docs = Docs(first, secrets["member"])
        rec = docs.ingest("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c, metadata={"dept": "legal"})
        gone = docs.ingest("gone.txt", b"The bank reports suspicious transactions within three business days.\n",
                           collection=c)
        assert docs.delete(gone["id"]).status_code == 200
        before = docs.ask(EN_PAGE2_QUESTION, collection=c)
        docs.close()
        assert first.stop() == 0, first.stderr()
    finally:
        first.kill()
    second = _start(sim, config_keys, tmp_path)
    try:
        docs = Docs(second, secrets["member"])
        assert docs.listed_ids(c) == [rec["id"]]
        assert docs.get(rec["id"]).json() == rec
        error_of(docs.get(gone["id"]), 404)
        after = docs.ask(EN_PAGE2_QUESTION, collection=c)
        assert gone["id"] not in cited_ids(docs.ask(EN_PAGE2_QUESTION, collection=c, top_k=50)), "deleted stays deleted"
        assert docs.ask(EN_PAGE2_QUESTION, collection=c, filters={"metadata": {"dept": "legal"}})["citations"]
        assert after["citations"][0]["document_id"] == rec["id"] and after["citations"][0]["page"] == 2
        assert [x["chunk_id"] for x in after["citations"]] == [x["chunk_id"] for x in before["citations"]]
        again = docs.upload("en_fpdf.pdf", fixture("en_fpdf.pdf"), collection=c)
        assert again.status_code == 200 and again.json()["id"] == rec["id"], "dedup survives the restart"
        docs.close()
    finally:
        second.kill()


# --- the built-in embedding model on /v1/embeddings --------------------------------------------

def _cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_the_built_in_embedding_model_is_384_dim_and_multilingual(gw, team_keys):
    client = openai.OpenAI(base_url=f"{gw[0].url}/v1", api_key=team_keys[0]["member"], max_retries=0, timeout=60)
    texts = ["Customer records must be kept for ten years.",
             "يجب الاحتفاظ بسجلات العملاء لمدة عشر سنوات.",
             "The cat is asleep on the warm windowsill."]
    resp = client.embeddings.create(model=E5, input=texts)  # the SDK's default: base64
    assert resp.model == E5
    assert [d.index for d in resp.data] == [0, 1, 2]
    en, ar, cat = (d.embedding for d in sorted(resp.data, key=lambda d: d.index))
    assert [len(v) for v in (en, ar, cat)] == [384] * 3
    assert all(math.isfinite(x) for x in en + ar + cat)
    assert _cos(en, ar) > _cos(en, cat) and _cos(en, ar) > _cos(ar, cat), (_cos(en, ar), _cos(en, cat), _cos(ar, cat))
    assert resp.usage.prompt_tokens > 0
    floats = client.embeddings.create(model=E5, input=texts[0], encoding_format="float")
    assert all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6) for x, y in zip(floats.data[0].embedding, en))


# --- last, so that `pytest -x` runs everything else first ---------------------------------------

@pytest.mark.parametrize("files", [["one.txt"], ["en_fpdf.pdf"], ["en_fpdf.pdf", "ar_harfbuzz.pdf"]],
                         ids=["one-chunk-txt", "one-pdf", "two-pdfs"])
def test_a_small_collection_that_states_the_answer_is_confident(api, files):
    """`confidence` is the probability that the collection answers the question: when the only
    document says it verbatim, that is more likely than not, however few chunks the collection
    holds (in a collection of a dozen chunks the same question scores above 0.99)."""
    c = new_collection()
    for name in files:
        data = b"Customer records must be kept for ten years.\n" if name == "one.txt" else fixture(name)
        api["member"].ingest(name, data, collection=c)
    answerable = api["member"].ask(EN_PAGE1_QUESTION, collection=c)
    assert "ten years" in answerable["citations"][0]["text"]
    seen = (answerable["confidence"], [(x["filename"], x["page"], x["score"], x["confidence"])
                                       for x in answerable["citations"]])
    assert answerable["confidence"] >= 0.5, seen
    assert answerable["citations"][0]["confidence"] >= 0.5, seen


# --- another embedding model, or none -----------------------------------------------------------

def test_an_upstream_embedding_model_replaces_the_built_in_one(sim, team_keys, tmp_path_factory):
    """`[documents] embedding_model` names a configured embedding model: uploads and queries are
    embedded by that upstream (the simulator's hashed-trigram model here), records name it, the
    built-in model is no longer listed, and confidence says it is uncalibrated (0.5)."""
    directory = tmp_path_factory.mktemp("docs-upstream")
    extra = harness.UNLIMITED + '\n[documents]\nembedding_model = "multilingual-e5-small"\n' \
        'query_prefix = "query: "\npassage_prefix = "passage: "\n'
    p = _start(sim, team_keys[1], directory, extra=extra)
    docs = Docs(p, team_keys[0]["member"])
    try:
        rec = docs.ingest("policy.txt", "Customer records must be kept for ten years.\n\n"
                          "Suspicious transactions are reported within three business days.\n".encode(),
                          collection="upstream")
        assert rec["model"] == "multilingual-e5-small", rec
        r = docs.query("How long must customer records be kept?", collection="upstream")
        assert r.status_code == 200, r.text
        result = r.json()
        assert result["model"] == "multilingual-e5-small"
        assert result["citations"] and result["citations"][0]["document_id"] == rec["id"]
        assert result["confidence"] == 0.5
        # The upstream saw the prefixed passages (each after its document's title, here the
        # filename's stem: issue 50's contextual chunk header) and query.
        seen = [q for q in harness.sim_requests(sim) if q.get("path", "").endswith("/embeddings")]
        inputs = [i for q in seen for i in (q.get("body", {}).get("input") or [])]
        assert any(i.startswith("passage: policy\nCustomer records") for i in inputs), seen[:2]
        assert any(i.startswith("query: How long") for i in inputs), seen[:2]
        models = docs.http.get("/v1/models").json()
        assert E5 not in {m["id"] for m in models["data"]}
    finally:
        docs.close()
        p.kill()


def test_without_the_model_uploads_and_queries_say_how_to_install_it(sim, team_keys, tmp_path_factory):
    directory = tmp_path_factory.mktemp("docs-nomodel")
    config = harness.gateway_config(harness.fleet_models(sim.url), team_keys[1])
    p = harness.start_gateway(config, directory, env={"SOVEREIGN_E5_MODEL": str(directory / "missing.bin")})
    docs = Docs(p, team_keys[0]["member"])
    try:
        for r in (docs.upload("a.txt", b"Some text."), docs.query("anything")):
            assert r.status_code == 503, r.text
            err = r.json()["error"]
            assert err["code"] == "retrieval_unavailable", err
            assert "setup-models" in err["message"], err
        # The rest of the gateway works.
        chat = docs.http.post("/v1/chat/completions", json={
            "model": "jais-30b-chat", "messages": [{"role": "user", "content": "hi"}]})
        assert chat.status_code == 200, chat.text
    finally:
        docs.close()
        p.kill()
