"""Every operation of clients/openapi.json marked `x-sovereign-client`, and the method(s) of
`Sovereign` implementing it (attribute paths from the client). tests/test_coverage.py fails when
the document and this table disagree (clients/SPEC.md)."""

from __future__ import annotations

from typing import Dict, Tuple

__all__ = ["OPERATIONS", "LOCAL_HELPERS"]

OPERATIONS: Dict[str, Tuple[str, ...]] = {
    "createChatCompletion": ("chat.completions.create", "sovereign.chat"),
    "createEmbedding": ("embeddings.create", "sovereign.embed"),
    "listModels": ("models.list",),
    "retrieveModel": ("models.retrieve",),
    "uploadDocument": ("documents.upload",),
    "listDocuments": ("documents.list",),
    "retrieveDocument": ("documents.retrieve",),
    "deleteDocument": ("documents.delete",),
    "queryRag": ("rag.query",),
    "queryActivityLogs": ("activity.query", "activity.export"),
    "verifyJournal": ("journal.verify",),
    "createJournalCheckpoint": ("journal.create_checkpoint",),
    "listJournalCheckpoints": ("journal.list_checkpoints",),
    "getActivityCheckpoint": ("journal.checkpoint",),
    "getActivityCheckpointKey": ("journal.checkpoint_key",),
    "getInclusionProof": ("journal.inclusion_proof",),
    "getConsistencyProof": ("journal.consistency_proof",),
    "listTeams": ("admin.teams.list",),
    "createTeam": ("admin.teams.create",),
    "retrieveTeam": ("admin.teams.retrieve",),
    "updateTeam": ("admin.teams.update",),
    "deleteTeam": ("admin.teams.delete",),
    "listKeys": ("admin.keys.list",),
    "createKey": ("admin.keys.create",),
    "retrieveKey": ("admin.keys.retrieve",),
    "rotateKey": ("admin.keys.rotate",),
    "revokeKey": ("admin.keys.revoke",),
    "getUsage": ("admin.usage.get",),
    "listPolicies": ("admin.policies.list",),
    "uploadPolicy": ("admin.policies.upload",),
    "activatePolicy": ("admin.policies.activate",),
    "getGuardrail": ("admin.guardrail.get",),
    "setGuardrail": ("admin.guardrail.set",),
}

#: The local helpers (no operation): module-level functions of `sovereign_gateway`.
LOCAL_HELPERS: Tuple[str, ...] = (
    "verify_journal_export",
    "verify_checkpoint",
    "verify_inclusion",
    "verify_consistency",
    "leaf_hash",
    "root_from_inclusion",
    "verify_consistency_proof",
    "verify_webhook",
)
