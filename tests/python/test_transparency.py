"""The activity journal as an RFC 9162 transparency log (issue 48), through the real binary.

Every proof and checkpoint is checked by the independent verifier of `tlog_verify.py` (hashlib,
base64 and the `cryptography` package's Ed25519; neither the project's client libraries nor its
Rust code):
RFC 9162 inclusion (§2.1.3.2) and consistency (§2.1.4.2) verification, C2SP signed-note
checkpoints verified with the key `/v1/activity/checkpoint/key` serves (itself checked against
the operator's `<signing_key>.pub`), and tree roots recomputed from the JSONL export's lines.
Cases: proofs for random exported entries, consistency between checkpoints across traffic, every
acknowledged entry provable at once (also under concurrent load), a kill -9 and retention; a
tampered line, a tampered proof, a forked history and a truncated log caught; roles; bad
parameters; `replica=`; the auditor's three CLI commands.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import random
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

import harness
import services

HI = [{"role": "user", "content": "hi"}]
SOVEREIGN_ID = "test-gw-1"
ORIGIN = f"sovereign-gateway/journal/{SOVEREIGN_ID}"
# Tiny segments, so the entries proved span several segment files.
SMALL = {"max_segment_entries": 4, "checkpoint_every": 3}
# Random entries are drawn with this seed (set SOVEREIGN_TLOG_SEED to replay another draw).
SEED = int(os.environ.get("SOVEREIGN_TLOG_SEED", "48"))


from tlog_verify import (
    Rejected,
    leaf_hash,
    mth,
    root_of_lines,
    root_from_inclusion,
    verify_consistency_proof,
    VKey,
    parse_vkey,
    verify_checkpoint,
    verify_inclusion,
    verify_consistency,
    b64,
    sign_note,
    vkey_line,
    rejects,
)

def test_the_verifier_itself_on_a_known_tree():
    """The verifier above, checked on a tree it computes itself before it judges the gateway:
    every inclusion path and consistency proof built from the RFC 9162 definitions verifies."""
    leaves = [leaf_hash(bytes([i]) * i) for i in range(13)]

    def path(m, d):  # RFC 9162 §2.1.3.1 PATH(m, D[n])
        if len(d) == 1:
            return []
        k = 1 << ((len(d) - 1).bit_length() - 1)
        return path(m, d[:k]) + [mth(d[k:])] if m < k else path(m - k, d[k:]) + [mth(d[:k])]

    def subproof(m, d, b):  # §2.1.4.1
        if m == len(d):
            return [] if b else [mth(d)]
        k = 1 << ((len(d) - 1).bit_length() - 1)
        if m <= k:
            return subproof(m, d[:k], b) + [mth(d[k:])]
        return subproof(m - k, d[k:], False) + [mth(d[:k])]

    for n in range(1, 14):
        for i in range(n):
            assert root_from_inclusion(leaves[i], i, n, path(i, leaves[:n])) == mth(leaves[:n])
            assert rejects(root_from_inclusion, leaves[i], i, n, path(i, leaves[:n])[:-1]) or n == 1
        for m in range(1, n + 1):
            verify_consistency_proof(m, n, mth(leaves[:m]), mth(leaves[:n]), subproof(m, leaves[:n], True))
            if m < n:
                assert rejects(verify_consistency_proof, m, n, mth(leaves[1:m + 1]), mth(leaves[:n]),
                               subproof(m, leaves[:n], True))


# --------------------------------------------------------------------------------------------
# Gateways and HTTP.
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def team_keys():
    names = {"admin": ("admin", "t1"), "member": ("member", "t1"), "auditor": ("auditor", "t1"),
             "auditor2": ("auditor", "t2"), "member2": ("member", "t2")}
    out, config = {}, {}
    for name, (role, team) in names.items():
        secret, hash_ = harness.new_key()
        out[name] = secret
        config[name] = (role, hash_, team)
    return out, config


@pytest.fixture(scope="module")
def tgw(sim, team_keys, tmp_path_factory):
    """A gateway with a small-segment journal and traffic from both teams; yields (process, dir)."""
    directory = tmp_path_factory.mktemp("tlog-gw")
    config = harness.gateway_config(harness.fleet_models(sim.url), team_keys[1], journal=SMALL)
    p = harness.start_gateway(config, directory)
    keys = team_keys[0]
    for i in range(30):
        traffic(p, keys["member" if i % 3 else "member2"])
    yield p, directory
    p.kill()


def api(gw: harness.Proc, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=gw.url, headers=headers, timeout=30)


def traffic(gw, key, model="jais-30b-chat") -> str:
    """One chat completion; its request id (answered, so journaled)."""
    with api(gw, key) as c:
        r = c.post("/v1/chat/completions", json={"model": model, "messages": HI})
    assert r.status_code == 200, r.text
    return r.headers["x-audit-trace-id"]


def export(gw, key, **query) -> list[bytes]:
    """The JSONL export's lines (each without its newline), as bytes."""
    with api(gw, key) as c:
        r = c.post("/v1/activity/logs", json={"format": "jsonl", **query})
    assert r.status_code == 200, r.text
    assert r.content == b"" or r.content.endswith(b"\n")
    return r.content.split(b"\n")[:-1]


def line_of(gw, key, request_id) -> bytes:
    (line,) = export(gw, key, request_id=request_id)
    return line


def by_seq(lines: list[bytes]) -> list[bytes]:
    """Lines in seq order: the leaf order. (On the PostgreSQL back end the export is in time
    order, then replica, then seq, and concurrent requests' timestamps need not follow seq.)"""
    return sorted(lines, key=lambda line: json.loads(line)["seq"])


def export_from_seq_1(gw, key, at_least: int) -> list[bytes]:
    """The whole export in seq order, once it holds at least `at_least` lines (on the PostgreSQL
    back end the export reads the shared index, which other entries reach within about half a
    second)."""
    lines = harness.wait_for(lambda: (lambda ls: ls if len(ls) >= at_least else None)(by_seq(export(gw, key))),
                             timeout=10, what=f"an export of {at_least} lines")
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))
    return lines


def get_checkpoint(gw, key) -> str:
    with api(gw, key) as c:
        r = c.get("/v1/activity/checkpoint")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return r.text


def get_vkey(gw, key) -> VKey:
    with api(gw, key) as c:
        r = c.get("/v1/activity/checkpoint/key")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    assert r.text.endswith("\n") and r.text.count("\n") == 1
    return parse_vkey(r.text)


def get_proof(gw, key, request_id, tree_size=None) -> httpx.Response:
    params = {"request_id": request_id, **({"tree_size": tree_size} if tree_size is not None else {})}
    with api(gw, key) as c:
        return c.get("/v1/activity/proof", params=params)


def proof_of(gw, key, request_id, tree_size=None) -> dict:
    r = get_proof(gw, key, request_id, tree_size)
    assert r.status_code == 200, r.text
    proof = r.json()
    most = math.ceil(math.log2(proof["tree_size"])) if proof["tree_size"] > 1 else 0
    assert len(proof["hashes"]) <= most, "an inclusion proof holds at most ⌈log₂ n⌉ hashes"
    return proof


def get_consistency(gw, key, first, second) -> httpx.Response:
    with api(gw, key) as c:
        return c.get("/v1/activity/consistency", params={"from": first, "to": second})


def consistency_of(gw, key, first, second) -> dict:
    r = get_consistency(gw, key, first, second)
    assert r.status_code == 200, r.text
    proof = r.json()
    assert (proof["from"], proof["to"]) == (first, second)
    return proof


def operator_public_key(directory: Path) -> bytes:
    """The operator's public key file (`<signing_key>.pub`: `ed25519:<hex>`)."""
    text = (directory / "data" / "journal-signing.key.pub").read_text().strip()
    assert text.startswith("ed25519:")
    return bytes.fromhex(text.removeprefix("ed25519:"))


def operator_seed(directory: Path) -> bytes:
    """The operator's signing key file (64 hex digits), which the test can read."""
    return bytes.fromhex((directory / "data" / "journal-signing.key").read_text().strip())


def tamper(line: bytes) -> bytes:
    """The line with one byte changed (a digit of its seq-independent latency)."""
    at = line.index(b'"latency_us":') + len(b'"latency_us":')
    changed = b"1" if line[at:at + 1] != b"1" else b"2"
    return line[:at] + changed + line[at + 1:]


# --------------------------------------------------------------------------------------------
# The checkpoint and its key.
# --------------------------------------------------------------------------------------------

def test_checkpoint_is_signed_by_the_published_key_which_is_the_operators(tgw, team_keys, tmp_path):
    gw, directory = tgw
    keys = team_keys[0]
    vkey = get_vkey(gw, keys["auditor"])
    assert vkey.name == ORIGIN, "default origin: sovereign-gateway/journal/<sovereign_id>"
    assert vkey.public == operator_public_key(directory), "the served key is the operator's key file"
    assert get_vkey(gw, keys["admin"]) == vkey

    note = get_checkpoint(gw, keys["auditor"])
    cp = verify_checkpoint(note, vkey)
    assert cp.origin == ORIGIN and cp.size >= 30
    # The exact C2SP shape: three body lines, a blank line, one signature line of the key.
    body, sigs = note.split("\n\n")
    assert body.split("\n") == [ORIGIN, str(cp.size), base64.b64encode(cp.root).decode()]
    assert sigs.startswith(f"\u2014 {ORIGIN} ") and sigs.count("\n") == 1
    # The root is the tree of the export's first `size` lines, recomputed here.
    lines = export_from_seq_1(gw, keys["admin"], cp.size)
    assert root_of_lines(lines[:cp.size]) == cp.root

    # Any change to the signed text, or the signature, is refused.
    for forged in (note.replace(f"\n{cp.size}\n", f"\n{cp.size + 1}\n", 1),
                   note.replace(base64.b64encode(cp.root).decode(),
                                base64.b64encode(hashlib.sha256(b"x").digest()).decode()),
                   flip_signature_bit(note)):
        assert rejects(verify_checkpoint, forged, vkey)
    # Another key (same name) signs a note the verifier does not accept; the operator's does.
    stranger = sign_note(ORIGIN, cp.size, cp.root, os.urandom(32))
    assert rejects(verify_checkpoint, stranger, vkey)
    assert verify_checkpoint(sign_note(ORIGIN, cp.size, cp.root, operator_seed(directory)), vkey) == cp

    # `sovereign journal key` prints the same key, from the config or from the key and origin.
    served = vkey_line(vkey)
    by_config = subprocess.run([str(harness.BIN), "journal", "key", "--config", str(directory / "gateway.toml")],
                               capture_output=True, text=True, timeout=60)
    assert by_config.returncode == 0, by_config.stderr
    assert by_config.stdout.strip() == served
    by_key = subprocess.run([str(harness.BIN), "journal", "key", "--signing-key",
                             str(directory / "data" / "journal-signing.key"), "--origin", ORIGIN],
                            capture_output=True, text=True, timeout=60)
    assert by_key.returncode == 0 and by_key.stdout.strip() == served, by_key.stderr


def flip_signature_bit(note: str) -> str:
    body, sig_line = note.rstrip("\n").rsplit("\n", 1)
    dash, name, blob = sig_line.split(" ")
    raw = bytearray(base64.b64decode(blob))
    raw[10] ^= 0x01  # inside the Ed25519 signature, past the key id
    return f"{body}\n{dash} {name} {base64.b64encode(bytes(raw)).decode()}\n"


# --------------------------------------------------------------------------------------------
# Inclusion and consistency.
# --------------------------------------------------------------------------------------------

def test_inclusion_proofs_of_random_exported_entries(tgw, team_keys):
    gw, _ = tgw
    keys = team_keys[0]
    admin = keys["admin"]
    vkey = get_vkey(gw, admin)
    note = get_checkpoint(gw, admin)
    cp = verify_checkpoint(note, vkey)
    lines = export_from_seq_1(gw, admin, cp.size)
    rng = random.Random(SEED)
    chosen = rng.sample(range(cp.size), 20)
    for index in chosen:
        line = lines[index]
        entry = json.loads(line)
        rid = entry["request_id"]
        # Without tree_size: the latest checkpoint's tree, and its note comes along.
        proof = proof_of(gw, admin, rid)
        assert proof["leaf_index"] == entry["seq"] - 1 == index, (SEED, rid)
        assert verify_inclusion(line, proof, proof["checkpoint"], vkey).size == proof["tree_size"]
        # With tree_size: the tree of the checkpoint taken above.
        sized = proof_of(gw, admin, rid, cp.size)
        assert "checkpoint" not in sized
        assert sized["tree_size"] == cp.size and sized["leaf_index"] == index
        verify_inclusion(line, sized, note, vkey)
        # With the smallest tree that holds it, and one in between: checked against roots
        # recomputed from the export (no signed checkpoint of those sizes exists).
        for size in {index + 1, rng.randint(index + 1, cp.size)}:
            small = proof_of(gw, admin, rid, size)
            path = [b64(h) for h in small["hashes"]]
            assert root_from_inclusion(leaf_hash(line), index, size, path) == root_of_lines(lines[:size]), \
                (SEED, rid, size)


def test_consistency_between_checkpoints_before_and_after_more_traffic(tgw, team_keys):
    gw, _ = tgw
    keys = team_keys[0]
    auditor = keys["auditor"]
    vkey = get_vkey(gw, auditor)
    notes = [get_checkpoint(gw, auditor)]
    for burst in (1, 5, 9):
        for _ in range(burst):
            traffic(gw, keys["member"])
        notes.append(get_checkpoint(gw, auditor))
    cps = [verify_checkpoint(n, vkey) for n in notes]
    assert [c.size for c in cps] == sorted(c.size for c in cps) and cps[-1].size >= cps[0].size + 15
    for i, old in enumerate(notes):
        for new in notes[i:]:
            a, b = verify_checkpoint(old, vkey), verify_checkpoint(new, vkey)
            proof = consistency_of(gw, auditor, a.size, b.size)
            verify_consistency(old, new, proof, vkey)
            if a.size == b.size:
                assert proof["hashes"] == []
            else:
                # The new checkpoint is no prefix of the old one; a swapped proof fails.
                assert rejects(verify_consistency_proof, a.size, b.size, b.root, a.root,
                               [b64(h) for h in proof["hashes"]])

    # Several pairs of sizes inside the log, checked against roots recomputed from the export.
    lines = export_from_seq_1(gw, keys["admin"], cps[-1].size)
    rng = random.Random(SEED)
    pairs = {(1, 1), (1, 2), (2, cps[-1].size), (cps[-1].size, cps[-1].size)}
    while len(pairs) < 16:
        m = rng.randint(1, cps[-1].size)
        pairs.add((m, rng.randint(m, cps[-1].size)))
    for m, n in sorted(pairs):
        proof = consistency_of(gw, auditor, m, n)
        verify_consistency_proof(m, n, root_of_lines(lines[:m]), root_of_lines(lines[:n]),
                                 [b64(h) for h in proof["hashes"]])
        assert len(proof["hashes"]) <= 2 * max(1, math.ceil(math.log2(n))), (m, n)


def test_every_acknowledged_entry_is_inside_the_next_checkpoint(tgw, team_keys, sim):
    """A request, then at once the checkpoint: its entry is in that tree (and in the proof's own
    head when no tree_size is given), whatever the request's outcome."""
    gw, _ = tgw
    keys = team_keys[0]
    vkey = get_vkey(gw, keys["admin"])
    for i in range(8):
        with api(gw, keys["member2" if i % 2 else "member"]) as c:
            if i % 4 == 3:
                r = c.post("/v1/chat/completions", json={"model": "no-such-model", "messages": HI})
                assert r.status_code == 404
            else:
                r = c.post("/v1/chat/completions", json={"model": "allam-7b-instruct", "messages": HI})
                assert r.status_code == 200
        rid = r.headers["x-audit-trace-id"]
        note = get_checkpoint(gw, keys["auditor2" if i % 2 else "auditor"])
        cp = verify_checkpoint(note, vkey)
        proof = proof_of(gw, keys["admin"], rid, cp.size)
        assert proof["leaf_index"] < cp.size
        verify_inclusion(line_of(gw, keys["admin"], rid), proof, note, vkey)

        # And straight after a request, without a checkpoint asked for first.
        rid = traffic(gw, keys["member"])
        proof = proof_of(gw, keys["auditor"], rid)
        verify_inclusion(line_of(gw, keys["auditor"], rid), proof, proof["checkpoint"], vkey)


def test_every_acknowledged_entry_proves_at_once_under_concurrent_load(tgw, team_keys):
    """Sixteen clients, each: a request, then at once its proof (no tree_size: the gateway picks a
    head holding it), or a checkpoint and then the proof in that tree. Every acknowledged entry is
    provable the moment it is acknowledged, while others are being written."""
    gw, _ = tgw
    keys = team_keys[0]
    vkey = get_vkey(gw, keys["admin"])
    failures: list[str] = []
    lock = threading.Lock()

    def client(n: int):
        member, auditor = ("member", "auditor") if n % 2 else ("member2", "auditor2")
        with api(gw, keys[member]) as m, api(gw, keys[auditor]) as a:
            for i in range(20):
                r = m.get("/v1/models")
                rid = r.headers["x-audit-trace-id"]
                try:
                    if i % 4 == 0:
                        note = a.get("/v1/activity/checkpoint").text
                        size = verify_checkpoint(note, vkey).size
                        p = a.get("/v1/activity/proof", params={"request_id": rid, "tree_size": size})
                    else:
                        p = a.get("/v1/activity/proof", params={"request_id": rid})
                        note = p.json().get("checkpoint") if p.status_code == 200 else None
                    if p.status_code != 200:
                        raise Rejected(f"{p.status_code} {p.text}")
                    line = a.post("/v1/activity/logs", json={"format": "jsonl", "request_id": rid}).content
                    verify_inclusion(line, p.json(), note, vkey)
                except Rejected as e:
                    with lock:
                        failures.append(f"{rid} ({'after a checkpoint' if i % 4 == 0 else 'at once'}): {e}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures, f"{len(failures)} of {16 * 20} acknowledged entries did not prove at once: {failures[:3]}"


def test_checkpoint_key_and_consistency_of_a_named_replica(tgw, team_keys):
    """`replica=`: this gateway's own id is its own log; an id no replica published is a 404 naming
    the parameter; other parameters are refused."""
    gw, _ = tgw
    admin = team_keys[0]["admin"]
    vkey = get_vkey(gw, admin)
    with api(gw, admin) as c:
        r = c.get("/v1/activity/checkpoint/key", params={"replica": SOVEREIGN_ID})
        assert r.status_code == 200 and parse_vkey(r.text) == vkey
        r = c.get("/v1/activity/checkpoint", params={"replica": SOVEREIGN_ID})
        assert r.status_code == 200 and verify_checkpoint(r.text, vkey).size > 1
        r = c.get("/v1/activity/consistency", params={"from": 1, "to": 2, "replica": SOVEREIGN_ID})
        assert r.status_code == 200 and r.json()["hashes"]
        for path, params in (("/v1/activity/checkpoint", {}), ("/v1/activity/checkpoint/key", {}),
                             ("/v1/activity/consistency", {"from": 1, "to": 2})):
            r = c.get(path, params={**params, "replica": "nobody"})
            assert r.status_code == 404, (path, r.text)
            error = r.json()["error"]
            assert error["param"] == "replica" and error["code"] == "not_found", error
            assert_400(c.get(path, params={**params, "colour": "red"}))
            assert_400(c.get(path, params={**params, "replica": SOVEREIGN_ID, "replica ": "x"}))


# --------------------------------------------------------------------------------------------
# Tampering, forks and truncation are caught.
# --------------------------------------------------------------------------------------------

def test_a_tampered_line_or_proof_is_caught(tgw, team_keys):
    gw, _ = tgw
    admin = team_keys[0]["admin"]
    vkey = get_vkey(gw, admin)
    note = get_checkpoint(gw, admin)
    cp = verify_checkpoint(note, vkey)
    lines = export_from_seq_1(gw, admin, cp.size)
    rng = random.Random(SEED + 1)
    for index in rng.sample(range(1, cp.size - 1), 6):
        line = lines[index]
        proof = proof_of(gw, admin, json.loads(line)["request_id"], cp.size)
        verify_inclusion(line, proof, note, vkey)  # the genuine evidence verifies

        assert rejects(verify_inclusion, tamper(line), proof, note, vkey), "one byte of the line changed"
        assert rejects(verify_inclusion, line + b" ", proof, note, vkey), "a byte appended"
        assert rejects(verify_inclusion, lines[index + 1], proof, note, vkey), "another entry's line"
        for k in range(len(proof["hashes"])):
            altered = bytearray(b64(proof["hashes"][k]))
            altered[rng.randrange(32)] ^= 1 << rng.randrange(8)
            hashes = list(proof["hashes"])
            hashes[k] = base64.b64encode(bytes(altered)).decode()
            assert rejects(verify_inclusion, line, {**proof, "hashes": hashes}, note, vkey), ("altered", k)
            dropped = proof["hashes"][:k] + proof["hashes"][k + 1:]
            assert rejects(verify_inclusion, line, {**proof, "hashes": dropped}, note, vkey), ("dropped", k)
        doubled = proof["hashes"] + proof["hashes"][-1:]
        assert rejects(verify_inclusion, line, {**proof, "hashes": doubled}, note, vkey), "a hash added"
        for wrong in (index - 1, index + 1, cp.size, -1):
            assert rejects(verify_inclusion, line, {**proof, "leaf_index": wrong}, note, vkey), wrong
        assert rejects(verify_inclusion, line, {**proof, "tree_size": cp.size - 1}, note, vkey)

    # A tampered consistency proof.
    first = max(2, cp.size // 3)
    proof = consistency_of(gw, admin, first, cp.size)
    old_root = root_of_lines(lines[:first])
    verify_consistency_proof(first, cp.size, old_root, cp.root, [b64(h) for h in proof["hashes"]])
    for k in range(len(proof["hashes"])):
        hashes = [b64(h) for h in proof["hashes"]]
        assert rejects(verify_consistency_proof, first, cp.size, old_root, cp.root,
                       hashes[:k] + [hashlib.sha256(hashes[k]).digest()] + hashes[k + 1:]), ("altered", k)
        assert rejects(verify_consistency_proof, first, cp.size, old_root, cp.root,
                       hashes[:k] + hashes[k + 1:]), ("dropped", k)


def test_a_forked_history_is_caught(tgw, team_keys):
    """A checkpoint validly signed with the operator's own key over a different tree of the same
    size (the real lines with one changed): it is no prefix of a later real checkpoint, and the
    real entries are not in it."""
    gw, directory = tgw
    keys = team_keys[0]
    admin = keys["admin"]
    vkey = get_vkey(gw, admin)
    real_note = get_checkpoint(gw, admin)
    real = verify_checkpoint(real_note, vkey)
    n = real.size
    lines = export_from_seq_1(gw, admin, n)[:n]
    k = n // 2
    forked_lines = lines[:k] + [lines[k].replace(b'"status":"success"', b'"status":"error"', 1)] + lines[k + 1:]
    assert forked_lines[k] != lines[k]
    forked_note = sign_note(ORIGIN, n, root_of_lines(forked_lines), operator_seed(directory))
    forked = verify_checkpoint(forked_note, vkey)  # validly signed: only the proofs expose it
    assert forked.size == real.size and forked.root != real.root

    for _ in range(5):
        traffic(gw, keys["member"])
    later_note = get_checkpoint(gw, admin)
    later = verify_checkpoint(later_note, vkey)
    assert later.size > n
    proof = consistency_of(gw, admin, n, later.size)
    verify_consistency(real_note, later_note, proof, vkey)
    assert rejects(verify_consistency, forked_note, later_note, proof, vkey), "the fork is no prefix"
    # Equal sizes: the two heads cannot both be right.
    assert rejects(verify_consistency, forked_note, real_note, consistency_of(gw, admin, n, n), vkey)

    # Every real entry (the changed one included) fails inclusion in the forked tree.
    for index in sorted({0, k, n - 1, k // 2, (k + n) // 2}):
        rid = json.loads(lines[index])["request_id"]
        proof = proof_of(gw, admin, rid, n)
        verify_inclusion(lines[index], proof, real_note, vkey)
        assert rejects(verify_inclusion, lines[index], proof, forked_note, vkey), index

    # The gateway's own CLI agrees (exit 1 on the fork, 0 on the real history).
    work = directory / "fork-check"
    work.mkdir(exist_ok=True)
    (work / "key").write_text(vkey_line(vkey) + "\n")
    (work / "real").write_text(real_note)
    (work / "forked").write_text(forked_note)
    (work / "later").write_text(later_note)
    (work / "proof.json").write_text(json.dumps(consistency_of(gw, admin, n, later.size)))
    for old, code in (("real", 0), ("forked", 1)):
        run = subprocess.run([str(harness.BIN), "journal", "verify-consistency", str(work / old),
                              str(work / "later"), str(work / "proof.json"), "--key", str(work / "key")],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == code, (old, run.stdout, run.stderr)


def test_a_truncated_log_is_caught(tgw, team_keys):
    """A log handed over shorter than a checkpoint the auditor holds: its lines cannot produce the
    checkpoint's root, and the gateway refuses a consistency proof from a bigger tree to a
    smaller one."""
    gw, _ = tgw
    admin = team_keys[0]["admin"]
    vkey = get_vkey(gw, admin)
    note = get_checkpoint(gw, admin)
    cp = verify_checkpoint(note, vkey)
    lines = export_from_seq_1(gw, admin, cp.size)[:cp.size]
    assert root_of_lines(lines) == cp.root
    for cut in (1, 2, cp.size // 2):
        truncated = lines[:-cut]
        assert len(truncated) < cp.size
        assert root_of_lines(truncated) != cp.root
        # Padding it back out with a repeated line does not fake the root either.
        assert root_of_lines(truncated + truncated[-1:] * cut) != cp.root
        r = get_consistency(gw, admin, cp.size, cp.size - cut)
        assert_400(r, "from")
        assert rejects(verify_consistency_proof, cp.size, cp.size - cut, cp.root,
                       root_of_lines(truncated), [])


def truncate_journal(journal: Path, cut: int) -> None:
    """Removes the chain's last `cut` entries from the segment files, deleting a segment left
    with none (as an operator cutting the log back would)."""
    for segment in sorted(journal.glob(f"journal-{SOVEREIGN_ID}-*.jsonl"), reverse=True):
        lines = segment.read_bytes().split(b"\n")[:-1]
        drop = min(cut, len(lines))
        if drop == len(lines):
            segment.unlink()
        else:
            segment.write_bytes(b"".join(line + b"\n" for line in lines[:-drop]))
        cut -= drop
        if cut == 0:
            return


def test_a_log_cut_back_and_regrown_is_caught(sim, team_keys, tmp_path):
    """The journal's last entries removed on disk, the gateway restarted on it (forced past the
    damage its own verification reports): the checkpoint an auditor kept from before is refused
    as the `from` of a proof while the log is shorter, and once traffic has grown the log past
    it again, the new history is no extension of the old checkpoint."""
    keys, config_keys = team_keys
    auditor = keys["auditor"]
    config = harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=SMALL)
    gw = harness.start_gateway(config, tmp_path)
    for _ in range(12):
        traffic(gw, keys["member"])
    vkey = get_vkey(gw, auditor)
    kept_note = get_checkpoint(gw, auditor)
    kept = verify_checkpoint(kept_note, vkey)
    assert gw.stop() == 0

    journal = harness.journal_dir(tmp_path)
    total = sum(len(s.read_bytes().split(b"\n")) - 1 for s in journal.glob(f"journal-{SOVEREIGN_ID}-*.jsonl"))
    assert total >= kept.size
    truncate_journal(journal, total - kept.size + 4)  # the log now ends 4 entries before `kept`

    forced = harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal={**SMALL, "force": True})
    if services.BACKEND == "postgres":
        # The shared store holds a copy of every entry: a replica whose journal ends before the
        # store's copy of its chain refuses to start at all (force or not), naming the cut.
        with pytest.raises(RuntimeError, match="the shared store's copy of journal chain .* reaches seq"):
            harness.start_gateway(forced, tmp_path)
        return
    gw = harness.start_gateway(forced, tmp_path)
    try:
        assert get_vkey(gw, auditor) == vkey
        shorter_note = get_checkpoint(gw, auditor)
        shorter = verify_checkpoint(shorter_note, vkey)
        assert shorter.size < kept.size
        assert_400(get_consistency(gw, auditor, kept.size, shorter.size), "from")
        assert_400(get_consistency(gw, auditor, kept.size, kept.size), "to")
        assert rejects(verify_consistency, kept_note, shorter_note,
                       {"from": kept.size, "to": shorter.size, "hashes": []}, vkey)
        for _ in range(6):
            traffic(gw, keys["member"])
        regrown_note = get_checkpoint(gw, auditor)
        regrown = verify_checkpoint(regrown_note, vkey)
        assert regrown.size > kept.size
        proof = consistency_of(gw, auditor, kept.size, regrown.size)
        assert rejects(verify_consistency, kept_note, regrown_note, proof, vkey), "the regrown log is a fork"
        verify_consistency(shorter_note, regrown_note, consistency_of(gw, auditor, shorter.size, regrown.size), vkey)
        # The tree is the new history's: recomputed from the export, old prefix and new entries.
        lines = export_from_seq_1(gw, keys["admin"], regrown.size)
        assert root_of_lines(lines[:shorter.size]) == shorter.root
        assert root_of_lines(lines[:regrown.size]) == regrown.root
    finally:
        gw.kill()


# --------------------------------------------------------------------------------------------
# Roles and parameters.
# --------------------------------------------------------------------------------------------

def test_roles(tgw, team_keys):
    gw, _ = tgw
    keys = team_keys[0]
    t1 = traffic(gw, keys["member"])
    t2 = traffic(gw, keys["member2"])
    vkey = get_vkey(gw, keys["admin"])
    paths = ["/v1/activity/checkpoint", "/v1/activity/checkpoint/key",
             f"/v1/activity/proof?request_id={t1}", "/v1/activity/consistency?from=1&to=2"]
    for member in ("member", "member2"):
        for path in paths:
            with api(gw, keys[member]) as c:
                r = c.get(path)
            assert r.status_code == 403, (member, path, r.text)
            assert r.json()["error"]["type"] == "permission_error"
    for path in paths:
        with api(gw, None) as c:
            r = c.get(path)
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error", (path, r.text)
        with api(gw, "sk-not-a-key") as c:
            assert c.get(path).status_code == 401

    # An auditor proves its own team's entries; another team's are not there for it (404, the
    # same answer as for an id that exists nowhere); an admin proves any.
    for auditor, mine, theirs in (("auditor", t1, t2), ("auditor2", t2, t1)):
        proof = proof_of(gw, keys[auditor], mine)
        verify_inclusion(line_of(gw, keys[auditor], mine), proof, proof["checkpoint"], vkey)
        answers = []
        for rid in (theirs, "no-such-request"):
            r = get_proof(gw, keys[auditor], rid)
            assert r.status_code == 404, (auditor, rid, r.text)
            error = r.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}
            # The gateway's 404 everywhere: OpenAI's invalid_request_error with code not_found.
            assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "not_found",
                                                                      "request_id"), error
            answers.append(error["message"].replace(rid, "R"))
        assert answers[0] == answers[1], "another team's entry answers as one that does not exist"
        assert get_consistency(gw, keys[auditor], 1, 2).status_code == 200
    for rid in (t1, t2):
        proof = proof_of(gw, keys["admin"], rid)
        verify_inclusion(line_of(gw, keys["admin"], rid), proof, proof["checkpoint"], vkey)
    assert get_proof(gw, keys["admin"], "no-such-request").status_code == 404


def assert_400(r: httpx.Response, param: str | None = None):
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["type"] == "invalid_request_error" and error["message"]
    if param:
        assert error["param"] == param, error


@pytest.mark.parametrize("query, param", [
    ("", "request_id"),
    ("request_id=", "request_id"),
    ("tree_size=3", "request_id"),
    ("request_id={rid}&tree_size=0", "tree_size"),
    ("request_id={rid}&tree_size=-1", "tree_size"),
    ("request_id={rid}&tree_size=ten", "tree_size"),
    ("request_id={rid}&tree_size={leaf}", "tree_size"),  # below leaf_index + 1
    ("request_id={rid}&tree_size=1", "tree_size"),
    ("request_id={rid}&tree_size={above}", "tree_size"),
    ("request_id={rid}&tree_size=99999999999999999999999", "tree_size"),
    ("request_id={rid}&colour=red", None),
    ("request_id={rid}&request_id={rid}", "request_id"),
    ("request_id=" + "x" * 300, "request_id"),
])
def test_bad_proof_parameters_are_400(tgw, team_keys, query, param):
    gw, _ = tgw
    admin = team_keys[0]["admin"]
    rid = traffic(gw, team_keys[0]["member"])
    leaf = json.loads(line_of(gw, admin, rid))["seq"] - 1
    assert leaf >= 2
    above = verify_checkpoint(get_checkpoint(gw, admin), get_vkey(gw, admin)).size + 1000
    with api(gw, admin) as c:
        r = c.get("/v1/activity/proof?" + query.format(rid=rid, leaf=leaf, above=above))
    assert_400(r, param)


@pytest.mark.parametrize("query, param", [
    ("from=5&to=4", "from"),
    ("from=0&to=4", "from"),
    ("from=0&to=0", "from"),
    ("from=-1&to=4", "from"),
    ("from=1", "to"),
    ("to=4", "from"),
    ("", None),
    ("from=a&to=4", "from"),
    ("from=1&to=b", "to"),
    ("from=1&to={above}", "to"),
    ("from={above}&to={above}", None),
    ("from=1&to=4&colour=red", None),
    ("from=1&from=2&to=4", "from"),
])
def test_bad_consistency_parameters_are_400(tgw, team_keys, query, param):
    gw, _ = tgw
    admin = team_keys[0]["admin"]
    above = verify_checkpoint(get_checkpoint(gw, admin), get_vkey(gw, admin)).size + 1000
    with api(gw, admin) as c:
        r = c.get("/v1/activity/consistency?" + query.format(above=above))
    assert_400(r, param)


# --------------------------------------------------------------------------------------------
# A kill -9, and retention.
# --------------------------------------------------------------------------------------------

def test_survives_kill_9_right_after_traffic(sim, team_keys, tmp_path):
    """Four clients keep sending; the gateway is SIGKILLed; restarted on the same directory, its
    checkpoint extends one taken before the kill, and every request answered before the kill
    (those early on, and the last ones) proves in it."""
    keys, config_keys = team_keys
    config = harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=SMALL)
    gw = harness.start_gateway(config, tmp_path)
    early = [traffic(gw, keys["member" if i % 2 else "member2"]) for i in range(6)]
    vkey = get_vkey(gw, keys["admin"])
    before_note = get_checkpoint(gw, keys["admin"])
    before = verify_checkpoint(before_note, vkey)
    early_lines = {rid: line_of(gw, keys["admin"], rid) for rid in early}

    answered: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def load(key):
        with api(gw, key) as c:
            while not stop.is_set():
                try:
                    r = c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI})
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    with lock:
                        answered.append(r.headers["x-audit-trace-id"])

    threads = [threading.Thread(target=load, args=(keys["member" if i % 2 else "member2"],)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        harness.wait_for(lambda: len(answered) >= 40, timeout=60, what="40 answered requests")
    finally:
        gw.kill()  # SIGKILL, mid-traffic
        stop.set()
        for t in threads:
            t.join(timeout=30)
    with lock:
        acknowledged = list(answered)

    restarted = harness.start_gateway(config, tmp_path)
    assert get_vkey(restarted, keys["admin"]) == vkey
    after_note = get_checkpoint(restarted, keys["admin"])
    after = verify_checkpoint(after_note, vkey)
    assert after.size >= before.size + len(acknowledged)
    verify_consistency(before_note, after_note, consistency_of(restarted, keys["admin"], before.size, after.size),
                       vkey)
    for rid, line in early_lines.items():
        assert line_of(restarted, keys["admin"], rid) == line
        for size in (before.size, after.size):
            proof = proof_of(restarted, keys["admin"], rid, size)
            verify_inclusion(line, proof, before_note if size == before.size else after_note, vkey)
    lines = export_from_seq_1(restarted, keys["admin"], after.size)
    assert root_of_lines(lines[:after.size]) == after.root
    by_id = {json.loads(line)["request_id"]: line for line in lines}
    missing = [rid for rid in acknowledged if rid not in by_id]
    assert not missing, f"{len(missing)} of {len(acknowledged)} answered requests have no entry"
    for rid in acknowledged[:5] + acknowledged[-10:]:
        proof = proof_of(restarted, keys["admin"], rid, after.size)
        verify_inclusion(by_id[rid], proof, after_note, vkey)
    # The restarted gateway's log keeps growing as one history.
    rid = traffic(restarted, keys["member"])
    newest_note = get_checkpoint(restarted, keys["admin"])
    verify_consistency(before_note, newest_note,
                       consistency_of(restarted, keys["admin"], before.size, verify_checkpoint(newest_note, vkey).size),
                       vkey)
    proof = proof_of(restarted, keys["admin"], rid)
    verify_inclusion(line_of(restarted, keys["admin"], rid), proof, proof["checkpoint"], vkey)


def test_retention_keeps_proofs_and_consistency(sim, team_keys, tmp_path):
    """Segments of 5 entries pruned by `max_bytes`: proofs for the remaining entries, and for a
    pruned one from its line exported before, verify against checkpoints after the pruning, which
    are consistent with one from before it; the tree still commits to the pruned leaves."""
    keys, config_keys = team_keys
    archive = tmp_path / "archive"
    # max_bytes = 1: every pass prunes every closed segment (copied to the archive first).
    journal = {"max_segment_entries": 5, "max_bytes": 1, "retention_interval_s": 1, "export_dir": str(archive)}
    config = harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=journal)
    gw = harness.start_gateway(config, tmp_path)
    admin = keys["admin"]
    vkey = get_vkey(gw, admin)
    for i in range(12):
        traffic(gw, keys["member" if i % 2 else "member2"])
    before_note = get_checkpoint(gw, admin)
    before = verify_checkpoint(before_note, vkey)
    early = history(gw, admin, archive, before.size)[:before.size]
    assert root_of_lines(early) == before.root

    def pruned():
        if not (harness.journal_dir(tmp_path) / f"anchor-{SOVEREIGN_ID}.jsonl").exists():
            return False
        seqs = [json.loads(line)["seq"] for line in export(gw, admin)]
        return seqs and min(seqs) > 5

    harness.wait_for(pruned, timeout=20, what="a retention pass pruning the first segment")
    for i in range(7):
        traffic(gw, keys["member" if i % 2 else "member2"])
    remaining = by_seq(export(gw, admin))
    after_note = get_checkpoint(gw, admin)  # every exported entry was acknowledged before it
    after = verify_checkpoint(after_note, vkey)
    seqs = [json.loads(line)["seq"] for line in remaining]
    assert remaining and seqs[0] > 5, "the first segment was pruned"
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) and seqs[-1] <= after.size

    # Consistency across the pruning; the tree still commits to the pruned lines (copied to the
    # archive before pruning) followed by the remaining ones.
    verify_consistency(before_note, after_note, consistency_of(gw, admin, before.size, after.size), vkey)
    full = history(gw, admin, archive, after.size)
    assert full[:len(early)] == early
    assert root_of_lines(full[:after.size]) == after.root
    for line in remaining:
        rid = json.loads(line)["request_id"]
        verify_inclusion(line, proof_of(gw, admin, rid, after.size), after_note, vkey)
        proof = proof_of(gw, admin, rid)
        verify_inclusion(line, proof, proof["checkpoint"], vkey)
    # Pruned entries: their lines, exported before the pruning, still prove in the new tree.
    for line in (early[0], early[4]):
        rid = json.loads(line)["request_id"]
        r = get_proof(gw, admin, rid, after.size)
        assert r.status_code == 200, r.text
        verify_inclusion(line, r.json(), after_note, vkey)
        verify_inclusion(line, proof_of(gw, admin, rid, before.size), before_note, vkey)


def history(gw, key, archive: Path, at_least: int) -> list[bytes]:
    """Every line from seq 1, in seq order: the export, and before it what retention pruned (read
    from the archive after the export, so nothing pruned in between is missed)."""
    def read():
        lines = {json.loads(line)["seq"]: line for line in export(gw, key)}
        for segment in archive.glob(f"journal-{SOVEREIGN_ID}-*.jsonl"):
            for line in segment.read_bytes().split(b"\n")[:-1]:
                lines.setdefault(json.loads(line)["seq"], line)
        ordered = [lines[seq] for seq in sorted(lines)]
        return ordered if len(ordered) >= at_least else None

    lines = harness.wait_for(read, timeout=10, what=f"{at_least} lines")
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))
    return lines


# --------------------------------------------------------------------------------------------
# The auditor's three commands.
# --------------------------------------------------------------------------------------------

def test_cli_key_fetch_proof_verify_proof(tgw, team_keys, tmp_path):
    gw, directory = tgw
    keys = team_keys[0]
    rid = traffic(gw, keys["member2"])

    key_file = tmp_path / "gateway.vkey"
    key = subprocess.run([str(harness.BIN), "journal", "key", "--config", str(directory / "gateway.toml")],
                         capture_output=True, text=True, timeout=60)
    assert key.returncode == 0, key.stderr
    key_file.write_text(key.stdout)
    vkey = parse_vkey(key.stdout.strip())
    assert vkey == get_vkey(gw, keys["admin"])

    out = tmp_path / "evidence"
    env = {**os.environ, "SOVEREIGN_API_KEY": keys["auditor2"]}
    fetch = subprocess.run([str(harness.BIN), "journal", "fetch-proof", "--url", gw.url, "--request-id", rid,
                            "--out", str(out)], capture_output=True, text=True, timeout=60, env=env)
    assert fetch.returncode == 0, fetch.stdout + fetch.stderr
    # What it wrote is the evidence this test's own verifier accepts too.
    line = (out / "entry.jsonl").read_bytes()
    assert line.rstrip(b"\n") == line_of(gw, keys["admin"], rid)
    proof = json.loads((out / "proof.json").read_text())
    cp = verify_inclusion(line, proof, (out / "checkpoint.txt").read_text(), vkey)
    assert proof["leaf_index"] == json.loads(line)["seq"] - 1 and cp.size == proof["tree_size"]

    def verify_proof(evidence: Path) -> subprocess.CompletedProcess:
        return subprocess.run([str(harness.BIN), "journal", "verify-proof", str(evidence), "--key", str(key_file)],
                              capture_output=True, text=True, timeout=60)

    ok = verify_proof(out)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert rid in ok.stdout

    # One byte of the entry edited: exit 1.
    edited = tmp_path / "edited"
    edited.mkdir()
    for name in ("proof.json", "checkpoint.txt"):
        (edited / name).write_bytes((out / name).read_bytes())
    (edited / "entry.jsonl").write_bytes(tamper(line))
    bad = verify_proof(edited)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert rejects(verify_inclusion, tamper(line), proof, cp_note(out), vkey)

    # An edited proof (a hash altered) and a checkpoint signed by another key: exit 1 as well.
    if proof["hashes"]:
        altered = dict(proof, hashes=[base64.b64encode(hashlib.sha256(b"x").digest()).decode(), *proof["hashes"][1:]])
        (edited / "entry.jsonl").write_bytes(line)
        (edited / "proof.json").write_text(json.dumps(altered))
        assert verify_proof(edited).returncode == 1
    (edited / "proof.json").write_bytes((out / "proof.json").read_bytes())
    (edited / "checkpoint.txt").write_text(sign_note(ORIGIN, cp.size, cp.root, os.urandom(32)))
    assert verify_proof(edited).returncode == 1

    # Another team's auditor cannot fetch it; a member cannot either.
    for who in ("auditor", "member2"):
        denied = subprocess.run([str(harness.BIN), "journal", "fetch-proof", "--url", gw.url, "--request-id", rid,
                                 "--out", str(tmp_path / who)], capture_output=True, text=True, timeout=60,
                                env={**os.environ, "SOVEREIGN_API_KEY": keys[who]})
        assert denied.returncode != 0, (who, denied.stdout)


def cp_note(evidence: Path) -> str:
    return (evidence / "checkpoint.txt").read_text()
