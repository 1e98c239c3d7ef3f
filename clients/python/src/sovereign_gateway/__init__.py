"""Sovereign Gateway's Python client: the openai SDK's client (`Sovereign` is an `openai.OpenAI`)
with the gateway's sovereignty metadata, typed errors and retries, TLS options, documents, RAG,
the activity journal, the admin API, and offline verification of the journal (its export, its
transparency log's checkpoints and proofs) and of webhooks."""

from . import types
from ._client import CERTIFICATE_ONLY, MAX_RETRY_WAIT, AsyncSovereign, Sovereign
from ._errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BudgetExceededError,
    ConflictError,
    DataResidencyError,
    GuardrailViolationError,
    InternalServerError,
    JournalVerificationError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ResidencyError,
    ServiceUnavailableError,
    SovereignStatusError,
    UnprocessableEntityError,
    WebhookVerificationError,
)
from ._journal import GENESIS_HASH, JournalProblem, JournalVerification, jcs, verify_journal_export
from ._metadata import (
    SovereignAsyncStream,
    SovereignChatCompletion,
    SovereignEmbeddingResponse,
    SovereignModel,
    SovereignStream,
    Sovereignty,
    sovereignty_of,
)
from ._tlog import (
    VerifiedCheckpoint,
    leaf_hash,
    root_from_inclusion,
    verify_checkpoint,
    verify_consistency,
    verify_consistency_proof,
    verify_inclusion,
)
from ._webhooks import sign_webhook, verify_webhook

__version__ = "0.1.0"

__all__ = [
    "Sovereign",
    "AsyncSovereign",
    "CERTIFICATE_ONLY",
    "MAX_RETRY_WAIT",
    "Sovereignty",
    "sovereignty_of",
    "SovereignChatCompletion",
    "SovereignEmbeddingResponse",
    "SovereignStream",
    "SovereignAsyncStream",
    "SovereignModel",
    "SovereignStatusError",
    "BadRequestError",
    "GuardrailViolationError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "PayloadTooLargeError",
    "UnprocessableEntityError",
    "DataResidencyError",
    "ResidencyError",
    "BudgetExceededError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIConnectionError",
    "APITimeoutError",
    "WebhookVerificationError",
    "verify_journal_export",
    "JournalVerification",
    "JournalProblem",
    "GENESIS_HASH",
    "jcs",
    "verify_checkpoint",
    "verify_inclusion",
    "verify_consistency",
    "leaf_hash",
    "root_from_inclusion",
    "verify_consistency_proof",
    "VerifiedCheckpoint",
    "JournalVerificationError",
    "verify_webhook",
    "sign_webhook",
    "types",
]
