"""The transparency log's offline verifiers (clients/SPEC.md, "Transparency log proofs
(offline)") on the shared vectors tests/vectors/tlog.json: every valid case verifies, every bad
case fails with the reason its `why` starts with. Plus the online methods' requests and answers
on a scripted transport (no gateway)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Dict, List

import httpx2
import openai
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import sovereign_gateway as sg
from sovereign_gateway import (
    JournalVerificationError,
    VerifiedCheckpoint,
    leaf_hash,
    root_from_inclusion,
    verify_checkpoint,
    verify_consistency,
    verify_consistency_proof,
    verify_inclusion,
    verify_journal_export,
)
from sovereign_gateway._tlog import _open_note, _parse_vkey
from sovereign_gateway.types import ConsistencyProof, InclusionProof

VECTORS_PATH = Path(__file__).resolve().parent / ".." / ".." / ".." / "tests" / "vectors" / "tlog.json"
V = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))
PREFIXES = ("malformed", "bad signature", "untrusted key", "inclusion", "consistency")


def _prefix(why: str) -> str:
    prefix = why.split(":")[0]
    assert prefix in PREFIXES, why
    return prefix


def _roots(section: dict) -> Dict[int, bytes]:
    return {r["tree_size"]: base64.b64decode(r["root_hash"]) for r in section["roots"]}


def _mth(leaves: List[bytes]) -> bytes:
    """RFC 9162 §2.1.1 MTH, recursively: the roots the vectors give are checked against it."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def _ids(cases: List[dict]) -> List[str]:
    return [c["why"][:70] for c in cases]


# -- the Merkle tree -------------------------------------------------------------------------------


def test_vectors_cover_what_the_contract_asks():
    rfc = V["rfc9162"]
    assert rfc["leaves_hex"] == ["", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                                 "606162636465666768696a6b6c6d6e6f"]
    assert {(p["leaf_index"], p["tree_size"]) for p in rfc["inclusion"]} == \
        {(i, n) for n in range(1, 9) for i in range(n)}
    assert {(p["from"], p["to"]) for p in rfc["consistency"]} == \
        {(m, n) for n in range(1, 9) for m in range(1, n + 1)}
    assert V["generated"]["leaves_hex"] == [f"leaf-{i}".encode().hex() for i in range(len(V["generated"]["leaves_hex"]))]


def test_known_answers_of_the_hashes():
    # RFC 6962 / CT reference values (transparency-dev/merkle rfc6962_test.go, testonly/constants.go).
    assert leaf_hash(b"").hex() == "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    assert leaf_hash(b"L123456").hex() == "395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56"
    assert leaf_hash("L123456") == leaf_hash(b"L123456")
    assert V["rfc9162"]["roots"][8]["root_hash"] == base64.b64encode(bytes.fromhex(
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")).decode()


@pytest.mark.parametrize("section", ["rfc9162", "generated"])
def test_roots_are_the_merkle_tree_hashes(section):
    s = V[section]
    leaves = [bytes.fromhex(x) for x in s["leaves_hex"]]
    for n, root in _roots(s).items():
        assert _mth(leaves[:n]) == root, n


@pytest.mark.parametrize("section", ["rfc9162", "generated"])
def test_every_inclusion_proof_leads_to_its_root(section):
    s = V[section]
    roots = _roots(s)
    for p in s["inclusion"]:
        i, n = p["leaf_index"], p["tree_size"]
        leaf = leaf_hash(bytes.fromhex(s["leaves_hex"][i]))
        assert root_from_inclusion(leaf, i, n, p["hashes"]) == roots[n], (i, n)
        raw = [base64.b64decode(h) for h in p["hashes"]]  # raw bytes work as well as base64
        assert root_from_inclusion(base64.b64encode(leaf).decode(), i, n, raw) == roots[n], (i, n)


@pytest.mark.parametrize("section", ["rfc9162", "generated"])
def test_every_consistency_proof_verifies(section):
    s = V[section]
    roots = _roots(s)
    for p in s["consistency"]:
        m, n = p["from"], p["to"]
        verify_consistency_proof(m, n, roots[m], roots[n], p["hashes"])
        verify_consistency_proof(m, n, roots[m], roots[n], [base64.b64decode(h) for h in p["hashes"]])


def _check_inclusion(c: dict) -> None:
    root = root_from_inclusion(leaf_hash(bytes.fromhex(c["leaf_hex"])), c["leaf_index"], c["tree_size"], c["hashes"])
    if root != base64.b64decode(c["root_hash"]):
        raise JournalVerificationError("inclusion: the proof does not lead to the root hash")


@pytest.mark.parametrize("case", V["bad_inclusion"], ids=_ids(V["bad_inclusion"]))
def test_bad_inclusion_fails(case):
    with pytest.raises(JournalVerificationError) as e:
        _check_inclusion(case)
    assert e.value.reason.startswith(_prefix(case["why"])), e.value.reason
    assert str(e.value) == e.value.reason


@pytest.mark.parametrize("case", V["bad_consistency"], ids=_ids(V["bad_consistency"]))
def test_bad_consistency_fails(case):
    with pytest.raises(JournalVerificationError) as e:
        verify_consistency_proof(case["from"], case["to"], case["root1"], case["root2"], case["hashes"])
    assert e.value.reason.startswith(_prefix(case["why"])), e.value.reason


# -- signed notes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", V["notes"]["valid"], ids=[f"size {c['tree_size']}" for c in V["notes"]["valid"]])
def test_valid_checkpoints_verify(case):
    want = VerifiedCheckpoint(origin=case["origin"], tree_size=case["tree_size"],
                              root_hash=base64.b64decode(case["root_hash"]))
    assert verify_checkpoint(case["note"], case["vkey"]) == want
    assert verify_checkpoint(case["note"].encode("utf-8"), (case["vkey"] + "\n").encode()) == want


@pytest.mark.parametrize("case", V["notes"]["invalid"], ids=_ids(V["notes"]["invalid"]))
def test_invalid_checkpoints_fail(case):
    with pytest.raises(JournalVerificationError) as e:
        verify_checkpoint(case["note"], case["vkey"])
    assert e.value.reason.startswith(_prefix(case["why"])), e.value.reason


def test_the_c2sp_signed_note_example_verifies():
    # c2sp.org/signed-note, "Example": not a checkpoint, so through the note layer only.
    vkey = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
    note = ("This is an example message.\n\n\u2014 example.com/foo "
            "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n")
    assert _open_note(note, vkey) == "This is an example message.\n"
    name, kid, key = _parse_vkey(vkey)
    assert (name, kid.hex(), len(key)) == ("example.com/foo", "530d903a", 32)
    with pytest.raises(JournalVerificationError, match="^bad signature"):
        _open_note(note.replace("example message", "exemplary message"), vkey)
    with pytest.raises(JournalVerificationError, match="^malformed"):  # not a checkpoint
        verify_checkpoint(note, vkey)


def test_a_vkey_whose_base64_holds_a_plus_parses():
    vkey = V["journal"]["vkey"]
    assert vkey.count("+") > 2  # the base64 of this key holds "+": split at the first two only
    name, _, key = _parse_vkey(vkey)
    Ed25519PublicKey.from_public_bytes(key)
    assert name == "sovereign-gateway/journal/vectors-1"


@pytest.mark.parametrize("vkey", [
    "", "no-plus-signs", "name+530d903a", "+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
    "example.com/foo+530D903A+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",  # upper-case id
    "example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",  # id of another key
    "example.com/bar+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",  # another name
    "example.com/foo+530d903a+AkyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",   # not base64 / 32 bytes
])
def test_a_malformed_vkey_is_refused(vkey):
    with pytest.raises(JournalVerificationError, match="^malformed"):
        verify_checkpoint(V["notes"]["valid"][0]["note"], vkey)


# -- the journal, end to end -----------------------------------------------------------------------

J = V["journal"]
NOTES = {c["tree_size"]: c["note"] for c in J["checkpoints"]}


def test_the_journal_lines_are_a_valid_chain():
    result = verify_journal_export(J["lines"])
    assert result.ok and result.entries == len(J["lines"]) and result.first_seq == 1, result.problem
    assert [json.loads(line)["seq"] for line in J["lines"]] == list(range(1, len(J["lines"]) + 1))


def test_the_journal_checkpoints_verify():
    for size, note in NOTES.items():
        cp = verify_checkpoint(note, J["vkey"])
        assert cp.tree_size == size and cp.origin == "sovereign-gateway/journal/vectors-1"
        lines = [line.encode("utf-8") for line in J["lines"][:size]]
        assert cp.root_hash == _mth(lines)


@pytest.mark.parametrize("proof", J["inclusion"], ids=[f"{p['leaf_index']}@{p['tree_size']}" for p in J["inclusion"]])
def test_every_journal_line_is_included(proof):
    line, note = J["lines"][proof["leaf_index"]], NOTES[proof["tree_size"]]
    cp = verify_inclusion(line, proof, note, J["vkey"])
    assert cp.tree_size == proof["tree_size"]
    verify_inclusion(line + "\n", proof, note, J["vkey"])  # the export line as given, newline and all
    verify_inclusion((line + "\n").encode("utf-8"), InclusionProof.construct(**proof), note.encode(), J["vkey"])


@pytest.mark.parametrize("proof", J["consistency"], ids=[f"{p['from']}->{p['to']}" for p in J["consistency"]])
def test_journal_checkpoints_are_consistent(proof):
    new = verify_consistency(NOTES[proof["from"]], NOTES[proof["to"]], proof, J["vkey"])
    assert new.tree_size == proof["to"]
    model = ConsistencyProof.model_validate(proof)
    assert model.from_ == proof["from"]
    verify_consistency(NOTES[proof["from"]], NOTES[proof["to"]], model, J["vkey"])


@pytest.mark.parametrize("case", J["bad"], ids=_ids(J["bad"]))
def test_journal_bad_cases_fail(case):
    with pytest.raises(JournalVerificationError) as e:
        if case["kind"] == "inclusion":
            verify_inclusion(case["line"], case["proof"], case["note"], J["vkey"])
        else:
            assert case["kind"] == "consistency"
            verify_consistency(case["old_note"], case["new_note"], case["proof"], J["vkey"])
    assert e.value.reason.startswith(_prefix(case["why"])), e.value.reason


def test_a_malformed_proof_object_is_malformed():
    note, line = NOTES[12], J["lines"][0]
    for proof in [None, "{}", {"leaf_index": 0, "tree_size": 12}, {"leaf_index": True, "tree_size": 12, "hashes": []},
                  {"leaf_index": 0, "tree_size": 12, "hashes": "AAAA"},
                  {"leaf_index": 0, "tree_size": 12, "hashes": ["not base64!"]}]:
        with pytest.raises(JournalVerificationError, match="^malformed"):
            verify_inclusion(line, proof, note, J["vkey"])


def test_the_error_is_an_openai_error_and_a_value_error():
    with pytest.raises(openai.OpenAIError):
        verify_checkpoint("", J["vkey"])
    with pytest.raises(ValueError):
        verify_checkpoint("", J["vkey"])


# -- the online methods, on a scripted transport ------------------------------------------------


def _handler(seen: list):
    key = J["vkey"] + "\n"
    proof = J["inclusion"][-1]
    consistency = J["consistency"][0]

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        path = request.url.path
        if path == "/v1/activity/checkpoint":
            return httpx2.Response(200, text=NOTES[12], headers={"content-type": "text/plain; charset=utf-8"})
        if path == "/v1/activity/checkpoint/key":
            return httpx2.Response(200, text=key, headers={"content-type": "text/plain; charset=utf-8"})
        if path == "/v1/activity/proof":
            if request.url.params.get("request_id") == "req-unknown":
                return httpx2.Response(404, json={"error": {"message": "no such request", "type": "not_found_error",
                                                            "param": "request_id", "code": None}})
            return httpx2.Response(200, json=proof)
        if path == "/v1/activity/consistency":
            return httpx2.Response(200, json=consistency)
        return httpx2.Response(404, json={"error": {"message": path, "type": "not_found_error"}})

    return handler


def _client(seen: list) -> sg.Sovereign:
    return sg.Sovereign(base_url="http://gw.test/v1", api_key="k", max_retries=0,
                        http_client=httpx2.Client(transport=httpx2.MockTransport(_handler(seen))))


def test_online_methods_send_the_contracts_requests_and_verify_offline():
    seen: list = []
    client = _client(seen)
    note = client.journal.checkpoint()
    vkey = client.journal.checkpoint_key()
    assert note == NOTES[12] and vkey == J["vkey"]
    proof = client.journal.inclusion_proof("req-abc", tree_size=12)
    assert isinstance(proof, InclusionProof) and proof.tree_size == 12
    verify_inclusion(J["lines"][proof.leaf_index], proof, note, vkey)
    c = client.journal.consistency_proof(7, 12)
    assert isinstance(c, ConsistencyProof) and (c.from_, c.to) == (7, 12)
    verify_consistency(NOTES[7], note, c, vkey)
    client.journal.checkpoint(replica="demo-riyadh-1")
    client.journal.inclusion_proof("req-abc")

    got = [(r.method, r.url.path, dict(r.url.params)) for r in seen]
    assert got == [
        ("GET", "/v1/activity/checkpoint", {}),
        ("GET", "/v1/activity/checkpoint/key", {}),
        ("GET", "/v1/activity/proof", {"request_id": "req-abc", "tree_size": "12"}),
        ("GET", "/v1/activity/consistency", {"from": "7", "to": "12"}),
        ("GET", "/v1/activity/checkpoint", {"replica": "demo-riyadh-1"}),
        ("GET", "/v1/activity/proof", {"request_id": "req-abc"}),
    ]
    assert all(r.headers["authorization"] == "Bearer k" for r in seen)


def test_an_unknown_request_id_is_not_found():
    client = _client([])
    with pytest.raises(sg.NotFoundError):
        client.journal.inclusion_proof("req-unknown")


def test_async_online_methods():
    import asyncio

    seen: list = []

    async def run() -> None:
        client = sg.AsyncSovereign(base_url="http://gw.test/v1", api_key="k", max_retries=0,
                                   http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(_handler(seen))))
        note, vkey = await client.journal.checkpoint(), await client.journal.checkpoint_key()
        proof = await client.journal.inclusion_proof("req-abc", 12)
        verify_inclusion(J["lines"][proof.leaf_index], proof, note, vkey)
        c = await client.journal.consistency_proof(7, 12)
        verify_consistency(NOTES[7], note, c, vkey)

    asyncio.run(run())
    assert [r.url.path for r in seen] == ["/v1/activity/checkpoint", "/v1/activity/checkpoint/key",
                                         "/v1/activity/proof", "/v1/activity/consistency"]
