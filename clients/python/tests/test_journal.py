"""The activity journal: paged queries, exports, the server's verification, signed checkpoints,
and offline verification of an export (edited, truncated, untrusted key…)."""

from __future__ import annotations

import itertools
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from sovereign_gateway import NotFoundError, Sovereign, verify_journal_export
from sovereign_gateway.types import ActivityEntry, SignedCheckpoint


def _checkpoint(admin: Sovereign) -> SignedCheckpoint:
    try:
        return admin.journal.create_checkpoint()
    except NotFoundError:
        pytest.skip("this gateway build has no POST /v1/admin/journal/checkpoints (404)")


def _export_lines(admin: Sovereign) -> list[str]:
    text = admin.activity.export("jsonl")
    return [line for line in text.split("\n") if line]


@pytest.fixture(scope="module")
def traffic(member: Sovereign) -> None:
    for _ in range(3):
        member.chat.completions.create(model="llama-3.2-3b-instruct", messages=[{"role": "user", "content": "hi"}])


def test_query_pages_and_iterates_every_page(admin: Sovereign, traffic):
    page = admin.activity.query(limit=2)
    assert len(page.data) == 2 and isinstance(page.data[0], ActivityEntry) and page.next_cursor
    entries = list(itertools.islice(page, 7))  # walks past the first page
    seqs = [e.seq for e in entries]
    assert len(seqs) == 7 and seqs == sorted(set(seqs))
    llama = admin.activity.query(model="llama-3.2-3b-instruct")
    assert llama.data and all(e.model == "llama-3.2-3b-instruct" for e in llama.data)


def test_csv_export(admin: Sovereign, traffic):
    text = admin.activity.export("csv", limit=5)
    header, *rows = text.strip().split("\n")
    assert "seq" in header.split(",") and 1 <= len(rows) <= 5


def test_server_side_verification(admin: Sovereign, traffic):
    report = admin.journal.verify()
    assert report.ok, report.report


def test_an_export_verifies_offline_and_an_edit_is_found(admin: Sovereign, traffic):
    lines = _export_lines(admin)
    result = verify_journal_export(lines)
    assert result.ok, result.problem
    assert result.entries == len(lines) and result.first_seq == 1 and result.gaps == 0
    assert result.head_hash == json.loads(lines[-1])["journal_hash"]

    edited = list(lines)
    entry = json.loads(edited[2])
    entry["model"] = "someone-else" if entry.get("model") != "someone-else" else "x"
    edited[2] = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    bad = verify_journal_export("\n".join(edited) + "\n")
    assert not bad.ok and bad.problem is not None
    assert bad.problem.reason.startswith("edited") and bad.problem.line == 3
    assert bad.problem.seq == entry["seq"]


def test_link_order_and_gap_rules(admin: Sovereign, traffic):
    lines = _export_lines(admin)
    swapped = lines[:2] + [lines[3], lines[2]] + lines[4:]
    r = verify_journal_export(swapped)
    assert not r.ok and r.problem.reason.startswith("reordered") and r.problem.line == 4
    gap = lines[:2] + lines[3:]
    r = verify_journal_export(gap)
    assert r.ok and r.gaps == 1
    r = verify_journal_export(lines[:2] + ["{not json"])
    assert not r.ok and r.problem.reason.startswith("malformed") and r.problem.line == 3


def test_checkpoints_match_and_a_foreign_key_is_untrusted(demo, admin: Sovereign, auditor: Sovereign, traffic):
    cp = _checkpoint(admin)
    assert cp.public_key.startswith("ed25519:") and cp.seq >= 1
    listed = auditor.journal.list_checkpoints()
    assert any(c.seq == cp.seq and c.head_hash == cp.head_hash for c in listed.data)
    lines = _export_lines(admin)

    ok = verify_journal_export(lines, listed, public_key=cp.public_key)
    assert ok.ok, ok.problem
    assert ok.checkpoints_checked >= 1
    # Pinned to the operator's key file, and to this chain's id (the lines do not name it).
    pub = (demo.data_dir / "journal-signing.key.pub").read_text()
    mine = verify_journal_export(lines, listed, public_key=pub, sovereign_id=cp.sovereign_id)
    assert mine.ok and mine.checkpoints_checked >= 1, mine.problem
    assert verify_journal_export(lines, listed, sovereign_id="elsewhere").checkpoints_checked == 0

    other = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    r = verify_journal_export(lines, [cp], public_key="ed25519:" + other.hex())
    assert not r.ok and r.problem.reason.startswith("untrusted key")

    forged = cp.model_dump()
    forged["head_hash"] = "sha256:" + "1" * 64
    r = verify_journal_export(lines, [forged])
    assert not r.ok and r.problem.reason.startswith("bad signature")

    upto = [line for line in lines if json.loads(line)["seq"] < cp.seq]
    r = verify_journal_export(upto, [cp])
    assert not r.ok and r.problem.reason.startswith("truncated")
