"""Documents and retrieval: upload the Arabic PDF fixture, list, get, query with citations, delete."""

from __future__ import annotations

import asyncio
import uuid

import httpx2
import pytest

import sovereign_gateway as sg

from sovereign_gateway import NotFoundError, ServiceUnavailableError, Sovereign
from sovereign_gateway.types import Citation, Document

from conftest import REPO

FIXTURE = REPO / "host" / "documents" / "tests" / "fixtures" / "ar_harfbuzz.pdf"
QUESTION = "ما هي مدة الاحتفاظ بسجلات العملاء؟"


def test_documents_upload_list_get_query_delete(member: Sovereign):
    collection = f"py-{uuid.uuid4().hex[:8]}"
    try:
        doc = member.documents.upload(str(FIXTURE), collection=collection)  # a str path, as users write it
    except ServiceUnavailableError as e:
        pytest.skip(f"documents need the model files (scripts/setup-models): {e.message}")
    assert isinstance(doc, Document) and doc.filename == "ar_harfbuzz.pdf" and doc.pages == 2
    assert doc.collection == collection and doc.status == "completed"

    page = member.documents.list(collection=collection)
    assert [d.id for d in page] == [doc.id]
    assert member.documents.retrieve(doc.id).chunks == doc.chunks

    result = member.rag.query(QUESTION, collection=collection, top_k=2)
    assert result.citations and isinstance(result.citations[0], Citation)
    top = result.citations[0]
    assert (top.document_id, top.filename, top.page) == (doc.id, "ar_harfbuzz.pdf", 1)
    assert "عشر سنوات" in top.text and top.score > 0
    assert 0.0 < result.confidence <= 1.0

    assert member.documents.delete(doc.id).deleted
    with pytest.raises(NotFoundError):
        member.documents.retrieve(doc.id)


def _recording(seen: list, http_client_cls=httpx2.Client):
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.read())
        return httpx2.Response(200, json={"id": "doc_1", "object": "document", "filename": "x", "status": "ready"})

    return http_client_cls(transport=httpx2.MockTransport(handler))


def test_upload_takes_a_str_path(tmp_path):
    """`documents.upload("file.pdf")` sends the file's bytes under its name (the SDK alone raises
    a bare RuntimeError for a str)."""
    path = tmp_path / "notes.txt"
    path.write_text("retention: ten years")
    seen: list = []
    client = sg.Sovereign(base_url="http://gw.test", api_key="k", http_client=_recording(seen))
    client.documents.upload(str(path), collection="c")
    assert b'filename="notes.txt"' in seen[0] and b"retention: ten years" in seen[0]

    async def upload_async() -> None:
        aclient = sg.AsyncSovereign(base_url="http://gw.test", api_key="k",
                                    http_client=_recording(seen, httpx2.AsyncClient))
        await aclient.documents.upload(str(path))

    asyncio.run(upload_async())
    assert b'filename="notes.txt"' in seen[1]
