"""The journal as a transparency log, against `$SOVEREIGN_BIN demo` (issue 48): the signed
checkpoint, its key, an inclusion proof for a request's entry and a consistency proof between
two checkpoints, each fetched with the client and verified offline with `verify_checkpoint`,
`verify_inclusion` and `verify_consistency`. Nothing here skips: a gateway without these
endpoints fails."""

from __future__ import annotations

import hashlib
import json
from typing import List

import pytest

from sovereign_gateway import (
    BadRequestError,
    JournalVerificationError,
    NotFoundError,
    PermissionDeniedError,
    Sovereign,
    leaf_hash,
    verify_checkpoint,
    verify_consistency,
    verify_inclusion,
)
from sovereign_gateway.types import ConsistencyProof, InclusionProof

from conftest import Demo


def _chat(member: Sovereign, text: str) -> str:
    reply = member.chat.completions.create(model="llama-3.2-3b-instruct",
                                           messages=[{"role": "user", "content": text}])
    assert reply.audit_trace_id, "no X-Audit-Trace-ID"
    return reply.audit_trace_id


def _line_of(admin: Sovereign, request_id: str) -> str:
    lines = [line for line in admin.activity.export("jsonl", request_id=request_id).split("\n") if line]
    assert len(lines) == 1, lines
    assert json.loads(lines[0])["request_id"] == request_id
    return lines[0]


def _mth(leaves: List[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def test_checkpoint_key_and_proofs_verify_offline(demo: Demo, admin: Sovereign, auditor: Sovereign,
                                                  member: Sovereign):
    first_id = _chat(member, "transparency log, first")
    vkey = auditor.journal.checkpoint_key()
    name = vkey.split("+", 1)[0]
    assert name.startswith("sovereign-gateway/journal/"), vkey

    old_note = auditor.journal.checkpoint()
    old = verify_checkpoint(old_note, vkey)
    assert old.origin == name and old.tree_size >= 1

    # The request's entry is in the checkpointed tree: its export line is leaf seq - 1.
    line = _line_of(admin, first_id)
    seq = json.loads(line)["seq"]
    proof = auditor.journal.inclusion_proof(first_id, tree_size=old.tree_size)
    assert isinstance(proof, InclusionProof)
    assert (proof.leaf_index, proof.tree_size) == (seq - 1, old.tree_size)
    assert verify_inclusion(line + "\n", proof, old_note, vkey) == old

    # The tree is the export's lines: its root over the first tree_size lines is the checkpoint's.
    export = [x for x in admin.activity.export("jsonl").split("\n") if x]
    assert [json.loads(x)["seq"] for x in export[:old.tree_size]] == list(range(1, old.tree_size + 1))
    assert _mth([x.encode("utf-8") for x in export[:old.tree_size]]) == old.root_hash

    # More traffic, a newer checkpoint, and the log grew consistently.
    second_id = _chat(member, "transparency log, second")
    new_note = admin.journal.checkpoint()
    new = verify_checkpoint(new_note, vkey)
    assert new.tree_size > old.tree_size
    consistency = admin.journal.consistency_proof(old.tree_size, new.tree_size)
    assert isinstance(consistency, ConsistencyProof)
    assert (consistency.from_, consistency.to) == (old.tree_size, new.tree_size)
    assert verify_consistency(old_note, new_note, consistency, vkey) == new

    # The default tree size is the latest checkpoint's (at least the one just fetched).
    latest = admin.journal.inclusion_proof(second_id)
    assert latest.tree_size >= new.tree_size
    newest_note = admin.journal.checkpoint()
    newest = verify_checkpoint(newest_note, vkey)
    at_new = admin.journal.inclusion_proof(second_id, tree_size=new.tree_size)
    verify_inclusion(_line_of(admin, second_id), at_new, new_note, vkey)
    verify_inclusion(line, admin.journal.inclusion_proof(first_id, tree_size=newest.tree_size), newest_note, vkey)

    # Each check catches its tampering.
    edited = json.loads(line)
    edited["status"] = "blocked" if edited["status"] != "blocked" else "success"
    with pytest.raises(JournalVerificationError, match="^inclusion"):
        verify_inclusion(json.dumps(edited, separators=(",", ":"), ensure_ascii=False), proof, old_note, vkey)
    with pytest.raises(JournalVerificationError, match="^inclusion"):
        verify_inclusion(line, proof, new_note, vkey)  # the proof is for the older size
    with pytest.raises(JournalVerificationError, match="^consistency"):
        verify_consistency(new_note, old_note, consistency, vkey)
    if consistency.hashes:
        bad = consistency.model_dump(by_alias=True)
        bad["hashes"] = bad["hashes"][:-1]
        with pytest.raises(JournalVerificationError, match="^consistency"):
            verify_consistency(old_note, new_note, bad, vkey)
    forged = new_note.replace(f"\n{new.tree_size}\n", f"\n{new.tree_size + 1}\n", 1)
    with pytest.raises(JournalVerificationError, match="^bad signature"):
        verify_checkpoint(forged, vkey)


def test_replica_selects_this_gateways_checkpoint(admin: Sovereign, member: Sovereign):
    reply = member.chat.completions.create(model="llama-3.2-3b-instruct",
                                           messages=[{"role": "user", "content": "replica"}])
    assert reply.sovereign_id
    vkey = admin.journal.checkpoint_key()
    cp = verify_checkpoint(admin.journal.checkpoint(replica=reply.sovereign_id), vkey)
    assert cp.tree_size >= 1


def test_proof_errors_and_roles(admin: Sovereign, auditor: Sovereign, member: Sovereign):
    request_id = _chat(member, "mine")
    with pytest.raises(NotFoundError):
        admin.journal.inclusion_proof("req-00000000000000000000000000000000")
    with pytest.raises(PermissionDeniedError):
        member.journal.checkpoint()
    with pytest.raises(PermissionDeniedError):
        member.journal.checkpoint_key()
    with pytest.raises(PermissionDeniedError):
        member.journal.inclusion_proof(request_id)
    with pytest.raises(PermissionDeniedError):
        member.journal.consistency_proof(1, 1)
    size = verify_checkpoint(auditor.journal.checkpoint(), auditor.journal.checkpoint_key()).tree_size
    with pytest.raises(BadRequestError):
        admin.journal.inclusion_proof(request_id, tree_size=size + 1_000_000)
    with pytest.raises(BadRequestError):
        admin.journal.consistency_proof(0, size)
