"""Typed results of the gateway's own endpoints (docs/DOCUMENTS.md, docs/JOURNAL.md,
docs/LIMITS.md, docs/POLICIES.md, docs/GUARDRAIL.md). Unknown fields are kept (as in the
openai SDK's models), so a newer gateway does not break an older client."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from openai._models import BaseModel
from pydantic import Field

__all__ = [
    "Document",
    "DocumentList",
    "DocumentDeleted",
    "Citation",
    "RagResult",
    "ActivityEntry",
    "JournalCharge",
    "JournalProblem",
    "JournalChain",
    "JournalVerifyReport",
    "SignedCheckpoint",
    "CheckpointList",
    "InclusionProof",
    "ConsistencyProof",
    "Spend",
    "Team",
    "TeamList",
    "TeamDeleted",
    "ApiKey",
    "ApiKeyList",
    "UsageRow",
    "UsageTotal",
    "Usage",
    "PolicyVersion",
    "PolicyList",
    "Guardrail",
]


class Document(BaseModel):
    id: str
    object: str = "document"
    filename: Optional[str] = None
    collection: Optional[str] = None
    kind: Optional[str] = None
    bytes: Optional[int] = None
    pages: Optional[int] = None
    chunks: Optional[int] = None
    status: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    model: Optional[str] = None
    created_at: Optional[int] = None


class DocumentList(BaseModel):
    object: str = "list"
    data: List[Document] = []
    first_id: Optional[str] = None
    last_id: Optional[str] = None
    has_more: bool = False


class DocumentDeleted(BaseModel):
    id: str
    object: str = "document.deleted"
    deleted: bool


class Citation(BaseModel):
    document_id: str
    filename: Optional[str] = None
    page: Optional[int] = None
    paragraph: Optional[int] = None
    chunk_id: Optional[str] = None
    text: str = ""
    score: float = 0.0
    confidence: Optional[float] = None


class RagResult(BaseModel):
    object: str = "rag.result"
    query: Optional[str] = None
    collection: Optional[str] = None
    model: Optional[str] = None
    confidence: float = 0.0
    citations: List[Citation] = []
    answer: Optional[Any] = None


class JournalCharge(BaseModel):
    """What a request was charged (an entry's `charges`): the model whose prices applied, the
    spend in integer micro-units of the configured currency, tokens in and out."""

    model: str
    spend_micros: int
    tokens_in: int
    tokens_out: int


class ActivityEntry(BaseModel):
    """One journal entry as the `json` query shows it (strings, integers, nulls; `charges` a
    list of objects), plus `replica`. Fields beyond these are kept as extras."""

    seq: int
    sovereign_id: Optional[str] = None
    timestamp: Optional[str] = None
    request_id: Optional[str] = None
    actor_id: Optional[str] = None
    team_id: Optional[str] = None
    action: Optional[str] = None
    model: Optional[str] = None
    status: Optional[Any] = None
    charges: Optional[List[JournalCharge]] = None
    prev_hash: Optional[str] = None
    journal_hash: Optional[str] = None
    replica: Optional[str] = None


class JournalProblem(BaseModel):
    file: Optional[str] = None
    line: Optional[int] = None
    seq: Optional[int] = None
    reason: str = ""


class JournalChain(BaseModel):
    sovereign_id: Optional[str] = None
    ok: bool = False
    entries: int = 0
    pruned: Optional[int] = None
    segments: Optional[int] = None
    head_seq: Optional[int] = None
    head_hash: Optional[str] = None
    checkpoints_checked: int = 0
    torn_tail_bytes: Optional[int] = None
    problem: Optional[JournalProblem] = None


class JournalVerifyReport(BaseModel):
    """`GET /v1/admin/journal/verify`: the server's own verification; `ok` says the verdict."""

    object: str = "journal.verification"
    ok: bool
    report: Optional[str] = None
    chains: List[JournalChain] = []


class SignedCheckpoint(BaseModel):
    count: int
    head_hash: str
    public_key: str
    seq: int
    signature: str
    sovereign_id: str
    timestamp: str


class CheckpointList(BaseModel):
    object: str = "list"
    data: List[SignedCheckpoint] = []


class InclusionProof(BaseModel):
    """`GET /v1/activity/proof`: the RFC 9162 inclusion proof of one entry (leaf `leaf_index` =
    its seq - 1) in the tree of the first `tree_size` entries; `hashes` base64."""

    leaf_index: int
    tree_size: int
    hashes: List[str] = []


class ConsistencyProof(BaseModel):
    """`GET /v1/activity/consistency`: the RFC 9162 consistency proof from tree size `from`
    (`from_` here; `model_dump(by_alias=True)` gives `from`) to `to`; `hashes` base64."""

    from_: int = Field(alias="from")
    to: int
    hashes: List[str] = []


class Spend(BaseModel):
    currency: Optional[str] = None
    limit: Optional[float] = None
    spent: Optional[float] = None
    reserved: Optional[float] = None
    remaining: Optional[float] = None


class Team(BaseModel):
    id: str
    object: str = "team"
    name: Optional[str] = None
    plan: Optional[str] = None
    budget: Optional[float] = None
    token_cap_per_day: Optional[int] = None
    allowed_regions: List[str] = []
    sensitive_only: bool = False
    allowed_models: List[str] = []
    spend: Optional[Spend] = None
    created_at: Optional[int] = None
    updated_at: Optional[int] = None


class TeamList(BaseModel):
    object: str = "list"
    data: List[Team] = []


class TeamDeleted(BaseModel):
    id: str
    object: str = "team"
    deleted: bool


class ApiKey(BaseModel):
    """A key. `key` (the secret) is set only in the answers of create and rotate."""

    id: str
    object: str = "api_key"
    team_id: Optional[str] = None
    name: Optional[str] = None
    prefix: Optional[str] = None
    role: Optional[str] = None
    state: Optional[str] = None
    created_at: Optional[int] = None
    last_used_at: Optional[int] = None
    expires_at: Optional[int] = None
    revoked_at: Optional[int] = None
    rotated_to: Optional[str] = None
    grace_until: Optional[int] = None
    ip_allowlist: List[str] = []
    rpm: Optional[int] = None
    tpd: Optional[int] = None
    budget: Optional[float] = None
    spend: Optional[Spend] = None
    key: Optional[str] = None
    replaces: Optional[str] = None
    replaced_key: Optional["ApiKey"] = None


class ApiKeyList(BaseModel):
    object: str = "list"
    data: List[ApiKey] = []


class UsageRow(BaseModel):
    team_id: Optional[str] = None
    key_id: Optional[str] = None
    model: Optional[str] = None
    actor_id: Optional[str] = None
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    spend: float = 0.0


class UsageTotal(BaseModel):
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    spend: float = 0.0


class Usage(BaseModel):
    object: str = "list"
    currency: Optional[str] = None
    data: List[UsageRow] = []
    total: UsageTotal = UsageTotal()


class PolicyVersion(BaseModel):
    id: str
    kind: Optional[str] = None
    world: Optional[str] = None
    pool: Optional[str] = None
    name: Optional[str] = None
    component_sha256: Optional[str] = None
    document_sha256: Optional[str] = None
    status: Optional[str] = None
    active: bool = False
    created: Optional[int] = None
    origin: Optional[str] = None
    error: Optional[str] = None


class PolicyList(BaseModel):
    object: str = "list"
    active: Optional[str] = None
    breaker: Optional[Any] = None
    data: List[PolicyVersion] = []


class Guardrail(BaseModel):
    object: str = "guardrail"
    world: Optional[str] = None
    component_sha256: Optional[str] = None
    settings: Optional[Any] = None
