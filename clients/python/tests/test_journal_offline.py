"""Offline verification on a chain built here (hashes and Ed25519 signatures made in the test),
independent of the gateway."""

from __future__ import annotations

import hashlib
import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from sovereign_gateway import GENESIS_HASH, jcs, verify_journal_export

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUB = "ed25519:" + KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def _chain(n: int, sid: str = "eu-1") -> list:
    lines, prev = [], GENESIS_HASH
    for seq in range(1, n + 1):
        entry = {"seq": seq, "prev_hash": prev, "sovereign_id": sid, "model": "m\u00e9\n\"x\u0001",
                 "status": 200, "team_id": None, "action": "chat"}
        h = "sha256:" + hashlib.sha256(prev.encode() + jcs(entry)).hexdigest()
        lines.append(json.dumps({**entry, "journal_hash": h}, ensure_ascii=False))
        prev = h
    return lines


def _signed(seq: int, head_hash: str, key=KEY, sid: str = "eu-1") -> dict:
    pub = "ed25519:" + key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    cp = {"count": seq, "head_hash": head_hash, "public_key": pub, "seq": seq, "sovereign_id": sid,
          "timestamp": "2026-01-01T00:00:00Z"}
    return {**cp, "signature": "ed25519:" + key.sign(jcs(cp)).hex()}


def test_jcs_matches_the_canonical_form():
    assert jcs({"b": 1, "a": "\u00e9\n\u001f\"\\", "c": None}) == \
        '{"a":"\u00e9\\n\\u001f\\"\\\\","b":1,"c":null}'.encode()


def test_a_chain_with_a_checkpoint_verifies():
    lines = _chain(5)
    cp = _signed(4, json.loads(lines[3])["journal_hash"])
    r = verify_journal_export("\n".join(lines) + "\n", [json.dumps(cp)], public_key=PUB)
    assert r.ok and r.entries == 5 and r.checkpoints_checked == 1 and r.head_seq == 5


def test_each_failure_names_its_reason_and_line():
    lines = _chain(5)
    head4 = json.loads(lines[3])["journal_hash"]
    broken = json.loads(lines[2])
    broken["prev_hash"] = GENESIS_HASH
    del broken["journal_hash"]
    broken["journal_hash"] = "sha256:" + hashlib.sha256(GENESIS_HASH.encode() + jcs(broken)).hexdigest()
    r = verify_journal_export(lines[:2] + [json.dumps(broken)] + lines[3:])
    assert (r.ok, r.problem.reason.split(":")[0], r.problem.line) == (False, "broken link", 3)

    forged = {**_signed(4, head4), "head_hash": "sha256:" + "2" * 64}
    r = verify_journal_export(lines, [forged])
    assert r.problem.reason.startswith("bad signature")
    r = verify_journal_export(lines, [_signed(4, head4, Ed25519PrivateKey.generate())], public_key=PUB)
    assert r.problem.reason.startswith("untrusted key")
    r = verify_journal_export(lines, [_signed(4, json.loads(lines[2])["journal_hash"])])
    assert r.problem.reason.startswith("rewritten") and r.problem.line == 4
    r = verify_journal_export(lines[:3], [_signed(4, head4)])
    assert r.problem.reason.startswith("truncated")
    r = verify_journal_export(lines, [_signed(4, head4, sid="other")])
    assert r.ok and r.checkpoints_checked == 0


def test_an_export_whose_lines_do_not_name_their_chain():
    # The gateway's jsonl lines carry no sovereign_id: the export is one chain, named only by
    # the checkpoints (and the answer's X-Sovereign-ID).
    lines, prev = [], GENESIS_HASH
    for seq in range(1, 5):
        entry = {"seq": seq, "prev_hash": prev, "model": "m", "status": "success"}
        h = "sha256:" + hashlib.sha256(prev.encode() + jcs(entry)).hexdigest()
        lines.append(json.dumps({**entry, "journal_hash": h}))
        prev = h
    head3 = json.loads(lines[2])["journal_hash"]
    r = verify_journal_export(lines, [_signed(3, head3)], public_key=PUB)
    assert r.ok and r.checkpoints_checked == 1
    r = verify_journal_export(lines, [_signed(3, head3)], sovereign_id="eu-1")
    assert r.ok and r.checkpoints_checked == 1
    r = verify_journal_export(lines, [_signed(3, head3, sid="other")], sovereign_id="eu-1")
    assert r.ok and r.checkpoints_checked == 0
    r = verify_journal_export(lines[:2], [_signed(3, head3)], sovereign_id="eu-1")
    assert not r.ok and r.problem.reason.startswith("truncated")


# Two entries as the gateway writes them, the second with `charges` (docs/JOURNAL.md); hashes
# computed with the `rfc8785` package, independently of this library's `jcs`.
CHARGED_EXPORT = [
    ('{"action":"models.list","actor_id":"key_1","auth":"key","completion_tokens":null,'
     '"journal_hash":"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13",'
     '"key_id":"key_1","latency_us":812,"model":null,'
     '"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000",'
     '"prompt_hash":null,"prompt_tokens":null,"request_id":"req-1","residency_boundary":null,'
     '"routing_policy":null,"seq":1,"status":"success","team_id":"team_1",'
     '"timestamp":"2026-11-22T21:31:47.123Z"}'),
    ('{"action":"chat.completions","actor_id":"key_1","auth":"key",'
     '"charges":[{"model":"local-llama","spend_micros":42,"tokens_in":10,"tokens_out":20},'
     '{"model":"jais-30b-chat","spend_micros":0,"tokens_in":7,"tokens_out":0}],'
     '"completion_tokens":20,'
     '"journal_hash":"sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee",'
     '"key_id":"key_1","latency_us":1234,"model":"local-llama",'
     '"prev_hash":"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13",'
     '"prompt_hash":"sha256:abababababababababababababababababababababababababababababababab",'
     '"prompt_tokens":10,"request_id":"req-2","residency_boundary":"eu-west",'
     '"routing_policy":"sovereign-default","seq":2,"status":"success","team_id":"team_1",'
     '"timestamp":"2026-11-22T21:31:48.456Z"}'),
]


def test_an_entry_with_charges_hashes_its_nested_objects():
    assert jcs({"z": [{"tokens_out": 20, "model": "m", "tokens_in": 10, "spend_micros": 42}], "a": None}) == \
        b'{"a":null,"z":[{"model":"m","spend_micros":42,"tokens_in":10,"tokens_out":20}]}'
    r = verify_journal_export(CHARGED_EXPORT)
    assert r.ok and r.entries == 2
    assert r.head_hash == "sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee"
    # Re-encoded, not trusted as written: the charges' keys in another order still verify...
    second = json.loads(CHARGED_EXPORT[1])
    second["charges"] = [dict(reversed(list(c.items()))) for c in second["charges"]]
    assert verify_journal_export([CHARGED_EXPORT[0], json.dumps(second)]).ok
    # ...but an edited charge, or the charges reordered, does not.
    edited = CHARGED_EXPORT[1].replace('"spend_micros":42', '"spend_micros":41')
    r = verify_journal_export([CHARGED_EXPORT[0], edited])
    assert (r.ok, r.problem.reason.split(":")[0], r.problem.line) == (False, "edited", 2)
    second["charges"].reverse()
    assert not verify_journal_export([CHARGED_EXPORT[0], json.dumps(second)]).ok
