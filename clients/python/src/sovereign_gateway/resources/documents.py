"""`client.documents` (upload, list, retrieve, delete) and `client.rag` (query with citations):
docs/DOCUMENTS.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Union, cast

from openai._files import FileTypes
from openai._resource import AsyncAPIResource, SyncAPIResource
from openai._utils import extract_files
from openai.pagination import AsyncCursorPage, SyncCursorPage
from typing_extensions import Unpack

from ..types import Document, DocumentDeleted, RagResult
from ._common import RequestOverrides, clean, request_options

__all__ = ["Documents", "AsyncDocuments", "Rag", "AsyncRag"]


def _upload_parts(file: Union[FileTypes, str], collection: Optional[str], metadata: Optional[Mapping[str, Any]]) -> Any:
    import json

    if isinstance(file, str):
        file = Path(file)  # a path, as in `documents.upload("report.pdf")` (the SDK takes PathLike)
    body: Dict[str, Any] = {"file": file}
    if collection is not None:
        body["collection"] = collection
    if metadata is not None:
        body["metadata"] = json.dumps(dict(metadata))
    files = extract_files(cast(Mapping[str, object], body), paths=[["file"]])
    return body, files


def _multipart(overrides: RequestOverrides) -> RequestOverrides:
    headers = {"Content-Type": "multipart/form-data", **(overrides.get("extra_headers") or {})}
    return cast(RequestOverrides, {**overrides, "extra_headers": headers})


def _rag_body(query: str, **fields: Any) -> Dict[str, Any]:
    return clean({"query": query, **fields})


class Documents(SyncAPIResource):
    def upload(
        self,
        file: Union[FileTypes, str],
        *,
        collection: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        wait: bool = True,
        **overrides: Unpack[RequestOverrides],
    ) -> Document:
        """Upload a PDF/DOCX/text file (a path as `str` or `Path`, bytes, a file object or
        `(name, content, type)`)
        into the team's library: `POST /v1/documents/upload` (uploadDocument). The same bytes
        in the same collection answer the stored record. By default the call waits until the
        document is searchable (`?wait=true`, at most 300 s on the gateway); `wait=False`
        answers at once with the document `in_progress`, to poll with `retrieve`."""
        body, files = _upload_parts(file, collection, metadata)
        return self._post(
            "/documents/upload",
            body=body,
            files=files,
            cast_to=Document,
            options=request_options(_multipart(overrides), {"wait": "true" if wait else "false"}),
        )

    def list(
        self,
        *,
        collection: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> SyncCursorPage[Document]:
        """`GET /v1/documents` (listDocuments); iterate the page to walk every page."""
        return self._get_api_list(
            "/documents",
            page=SyncCursorPage[Document],
            model=Document,
            options=request_options(overrides, {"collection": collection, "limit": limit, "after": after}),
        )

    def retrieve(self, document_id: str, **overrides: Unpack[RequestOverrides]) -> Document:
        """`GET /v1/documents/{id}` (retrieveDocument)."""
        return self._get(f"/documents/{document_id}", cast_to=Document, options=request_options(overrides))

    def delete(self, document_id: str, **overrides: Unpack[RequestOverrides]) -> DocumentDeleted:
        """`DELETE /v1/documents/{id}` (deleteDocument)."""
        return self._delete(f"/documents/{document_id}", cast_to=DocumentDeleted, options=request_options(overrides))


class AsyncDocuments(AsyncAPIResource):
    async def upload(
        self,
        file: Union[FileTypes, str],
        *,
        collection: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        wait: bool = True,
        **overrides: Unpack[RequestOverrides],
    ) -> Document:
        body, files = _upload_parts(file, collection, metadata)
        return await self._post(
            "/documents/upload",
            body=body,
            files=files,
            cast_to=Document,
            options=request_options(_multipart(overrides), {"wait": "true" if wait else "false"}),
        )

    def list(
        self,
        *,
        collection: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> Any:
        """An `AsyncPaginator`: `await` it for the first page, or `async for` every document."""
        return self._get_api_list(
            "/documents",
            page=AsyncCursorPage[Document],
            model=Document,
            options=request_options(overrides, {"collection": collection, "limit": limit, "after": after}),
        )

    async def retrieve(self, document_id: str, **overrides: Unpack[RequestOverrides]) -> Document:
        return await self._get(f"/documents/{document_id}", cast_to=Document, options=request_options(overrides))

    async def delete(self, document_id: str, **overrides: Unpack[RequestOverrides]) -> DocumentDeleted:
        return await self._delete(
            f"/documents/{document_id}", cast_to=DocumentDeleted, options=request_options(overrides)
        )


class Rag(SyncAPIResource):
    def query(
        self,
        query: str,
        *,
        collection: Optional[str] = None,
        top_k: Optional[int] = None,
        filters: Optional[Mapping[str, Any]] = None,
        min_confidence: Optional[float] = None,
        generate: Optional[bool] = None,
        model: Optional[str] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        user: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> RagResult:
        """`POST /v1/rag/query` (queryRag): typed `citations` and a `confidence`."""
        body = _rag_body(
            query, collection=collection, top_k=top_k, filters=filters, min_confidence=min_confidence,
            generate=generate, model=model, max_tokens=max_tokens, temperature=temperature, user=user,
        )
        return self._post("/rag/query", body=body, cast_to=RagResult, options=request_options(overrides))


class AsyncRag(AsyncAPIResource):
    async def query(
        self,
        query: str,
        *,
        collection: Optional[str] = None,
        top_k: Optional[int] = None,
        filters: Optional[Mapping[str, Any]] = None,
        min_confidence: Optional[float] = None,
        generate: Optional[bool] = None,
        model: Optional[str] = None,
        max_tokens: Optional[int] = None,
        temperature: Optional[float] = None,
        user: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> RagResult:
        body = _rag_body(
            query, collection=collection, top_k=top_k, filters=filters, min_confidence=min_confidence,
            generate=generate, model=model, max_tokens=max_tokens, temperature=temperature, user=user,
        )
        return await self._post("/rag/query", body=body, cast_to=RagResult, options=request_options(overrides))


