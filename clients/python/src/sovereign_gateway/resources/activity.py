"""`client.activity` (the journal's read API, `POST /v1/activity/logs`: a page of entries with
an iterator over all pages, or a `jsonl`/`csv` export) and `client.journal` (server-side
verification, signed checkpoints, the transparency log's checkpoint, key and proofs, offline
verification). docs/JOURNAL.md."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional

from openai._base_client import BaseAsyncPage, BasePage, BaseSyncPage, PageInfo
from openai._resource import AsyncAPIResource, SyncAPIResource
from typing_extensions import Unpack, override

from .._journal import JournalVerification, verify_journal_export
from ..types import (
    ActivityEntry,
    CheckpointList,
    ConsistencyProof,
    InclusionProof,
    JournalVerifyReport,
    SignedCheckpoint,
)
from ._common import RequestOverrides, clean, request_options

__all__ = ["ActivityLogPage", "AsyncActivityLogPage", "Activity", "AsyncActivity", "Journal", "AsyncJournal"]


class _CursorMixin:
    data: List[ActivityEntry]
    next_cursor: Optional[str]

    def _get_page_items(self) -> List[ActivityEntry]:
        return self.data or []

    def has_next_page(self) -> bool:
        # A page may be empty and still continue (the server bounds the lines one read scans).
        return self.next_cursor is not None

    def next_page_info(self) -> Optional[PageInfo]:
        return PageInfo(json={"cursor": self.next_cursor}) if self.next_cursor else None


class ActivityLogPage(_CursorMixin, BaseSyncPage[ActivityEntry], BasePage[ActivityEntry]):
    """One page of entries; iterating it walks every following page."""

    object: str = "list"
    data: List[ActivityEntry] = []
    next_cursor: Optional[str] = None

    @override
    def has_next_page(self) -> bool:
        return _CursorMixin.has_next_page(self)


class AsyncActivityLogPage(_CursorMixin, BaseAsyncPage[ActivityEntry], BasePage[ActivityEntry]):
    object: str = "list"
    data: List[ActivityEntry] = []
    next_cursor: Optional[str] = None

    @override
    def has_next_page(self) -> bool:
        return _CursorMixin.has_next_page(self)


def _filters(**f: Any) -> Dict[str, Any]:
    if "from_" in f:
        f["from"] = f.pop("from_")
    return clean(f)


class Activity(SyncAPIResource):
    def query(
        self,
        *,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        actor_id: Optional[str] = None,
        team_id: Optional[str] = None,
        model: Optional[str] = None,
        status: Optional[str] = None,
        action: Optional[str] = None,
        request_id: Optional[str] = None,
        replica: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> ActivityLogPage:
        """queryActivityLogs with `format: json`: one page (`data`, `next_cursor`); iterate the
        page (`for entry in page`) for every entry of every page."""
        body = _filters(from_=from_, to=to, actor_id=actor_id, team_id=team_id, model=model, status=status,
                        action=action, request_id=request_id, replica=replica, limit=limit, cursor=cursor,
                        format="json")
        return self._get_api_list("/activity/logs", page=ActivityLogPage, model=ActivityEntry, body=body,
                                  method="post", options=request_options(overrides))

    def export(
        self,
        format: Literal["jsonl", "csv"] = "jsonl",
        *,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        actor_id: Optional[str] = None,
        team_id: Optional[str] = None,
        model: Optional[str] = None,
        status: Optional[str] = None,
        action: Optional[str] = None,
        request_id: Optional[str] = None,
        replica: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> str:
        """queryActivityLogs with `format: jsonl` (each line exactly as the chain holds it: what
        `verify_journal_export` takes) or `csv`: the export's text."""
        body = _filters(from_=from_, to=to, actor_id=actor_id, team_id=team_id, model=model, status=status,
                        action=action, request_id=request_id, replica=replica, limit=limit, cursor=cursor,
                        format=format)
        return self._post("/activity/logs", body=body, cast_to=str, options=request_options(overrides))


class AsyncActivity(AsyncAPIResource):
    def query(
        self,
        *,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        actor_id: Optional[str] = None,
        team_id: Optional[str] = None,
        model: Optional[str] = None,
        status: Optional[str] = None,
        action: Optional[str] = None,
        request_id: Optional[str] = None,
        replica: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> Any:
        """An `AsyncPaginator`: `await` it for the first page, or `async for` every entry."""
        body = _filters(from_=from_, to=to, actor_id=actor_id, team_id=team_id, model=model, status=status,
                        action=action, request_id=request_id, replica=replica, limit=limit, cursor=cursor,
                        format="json")
        return self._get_api_list("/activity/logs", page=AsyncActivityLogPage, model=ActivityEntry, body=body,
                                  method="post", options=request_options(overrides))

    async def export(
        self,
        format: Literal["jsonl", "csv"] = "jsonl",
        *,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        actor_id: Optional[str] = None,
        team_id: Optional[str] = None,
        model: Optional[str] = None,
        status: Optional[str] = None,
        action: Optional[str] = None,
        request_id: Optional[str] = None,
        replica: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> str:
        body = _filters(from_=from_, to=to, actor_id=actor_id, team_id=team_id, model=model, status=status,
                        action=action, request_id=request_id, replica=replica, limit=limit, cursor=cursor,
                        format=format)
        return await self._post("/activity/logs", body=body, cast_to=str, options=request_options(overrides))


class Journal(SyncAPIResource):
    def verify(self, **overrides: Unpack[RequestOverrides]) -> JournalVerifyReport:
        """`GET /v1/admin/journal/verify` (verifyJournal): the gateway's own report."""
        return self._get("/admin/journal/verify", cast_to=JournalVerifyReport, options=request_options(overrides))

    def create_checkpoint(self, **overrides: Unpack[RequestOverrides]) -> SignedCheckpoint:
        """`POST /v1/admin/journal/checkpoints` (createJournalCheckpoint): sign the head now."""
        return self._post("/admin/journal/checkpoints", cast_to=SignedCheckpoint, options=request_options(overrides))

    def list_checkpoints(self, **overrides: Unpack[RequestOverrides]) -> CheckpointList:
        """`GET /v1/admin/journal/checkpoints` (listJournalCheckpoints), oldest first."""
        return self._get("/admin/journal/checkpoints", cast_to=CheckpointList, options=request_options(overrides))

    def checkpoint(self, *, replica: Optional[str] = None, **overrides: Unpack[RequestOverrides]) -> str:
        """`GET /v1/activity/checkpoint`: the transparency log's signed checkpoint (a C2SP signed
        note, text) as the journal stands; `replica` picks a replica's on multi-replica
        deployments. Verify it with `verify_checkpoint(note, vkey)`."""
        return self._get("/activity/checkpoint", cast_to=str,
                         options=request_options(overrides, {"replica": replica}))

    def checkpoint_key(self, **overrides: Unpack[RequestOverrides]) -> str:
        """`GET /v1/activity/checkpoint/key`: the log's verifier key (`<name>+<key id>+<key>`,
        the newline stripped). Pin it rather than fetch it each time: a key fetched with the
        checkpoint proves only that the gateway signed it."""
        return self._get("/activity/checkpoint/key", cast_to=str, options=request_options(overrides)).strip()

    def inclusion_proof(
        self, request_id: str, tree_size: Optional[int] = None, **overrides: Unpack[RequestOverrides]
    ) -> InclusionProof:
        """`GET /v1/activity/proof`: the inclusion proof of the entry of `request_id` in the tree
        of `tree_size` entries (default: the latest checkpoint's size). Verify it with
        `verify_inclusion(line, proof, note, vkey)`."""
        return self._get("/activity/proof", cast_to=InclusionProof,
                         options=request_options(overrides, {"request_id": request_id, "tree_size": tree_size}))

    def consistency_proof(self, from_: int, to: int, **overrides: Unpack[RequestOverrides]) -> ConsistencyProof:
        """`GET /v1/activity/consistency`: the consistency proof from tree size `from_` (>= 1) to
        `to`. Verify it with `verify_consistency(old_note, new_note, proof, vkey)`."""
        return self._get("/activity/consistency", cast_to=ConsistencyProof,
                         options=request_options(overrides, {"from": from_, "to": to}))

    @staticmethod
    def verify_export(lines: Any, checkpoints: Any = None, public_key: Any = None) -> JournalVerification:
        """`verify_journal_export`, offline (no call)."""
        return verify_journal_export(lines, checkpoints, public_key)


class AsyncJournal(AsyncAPIResource):
    async def verify(self, **overrides: Unpack[RequestOverrides]) -> JournalVerifyReport:
        return await self._get(
            "/admin/journal/verify", cast_to=JournalVerifyReport, options=request_options(overrides)
        )

    async def create_checkpoint(self, **overrides: Unpack[RequestOverrides]) -> SignedCheckpoint:
        return await self._post(
            "/admin/journal/checkpoints", cast_to=SignedCheckpoint, options=request_options(overrides)
        )

    async def list_checkpoints(self, **overrides: Unpack[RequestOverrides]) -> CheckpointList:
        return await self._get(
            "/admin/journal/checkpoints", cast_to=CheckpointList, options=request_options(overrides)
        )

    async def checkpoint(self, *, replica: Optional[str] = None, **overrides: Unpack[RequestOverrides]) -> str:
        return await self._get("/activity/checkpoint", cast_to=str,
                               options=request_options(overrides, {"replica": replica}))

    async def checkpoint_key(self, **overrides: Unpack[RequestOverrides]) -> str:
        key = await self._get("/activity/checkpoint/key", cast_to=str, options=request_options(overrides))
        return key.strip()

    async def inclusion_proof(
        self, request_id: str, tree_size: Optional[int] = None, **overrides: Unpack[RequestOverrides]
    ) -> InclusionProof:
        return await self._get(
            "/activity/proof", cast_to=InclusionProof,
            options=request_options(overrides, {"request_id": request_id, "tree_size": tree_size}),
        )

    async def consistency_proof(
        self, from_: int, to: int, **overrides: Unpack[RequestOverrides]
    ) -> ConsistencyProof:
        return await self._get("/activity/consistency", cast_to=ConsistencyProof,
                               options=request_options(overrides, {"from": from_, "to": to}))

    @staticmethod
    def verify_export(lines: Any, checkpoints: Any = None, public_key: Any = None) -> JournalVerification:
        return verify_journal_export(lines, checkpoints, public_key)
