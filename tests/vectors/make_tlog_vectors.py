#!/usr/bin/env python3
"""Writes tests/vectors/tlog.json: the shared test vectors of the journal's transparency log
(issue 48: RFC 9162 Merkle tree hashing, inclusion and consistency proofs, C2SP tlog-checkpoint
signed notes with Ed25519), which every client library's verifier and the gateway's tests read.

Re-runnable and deterministic: the keys come from fixed seeds and Ed25519 signatures are
deterministic, so running it again writes the same bytes (`--check` fails if the file on disk
differs). Hashing is the standard library's; Ed25519 is the `cryptography` package's.

    .venv/bin/python tests/vectors/make_tlog_vectors.py          # (re)write tlog.json
    .venv/bin/python tests/vectors/make_tlog_vectors.py --check  # fail if it is stale

This file is its own second implementation: the tree hashing and proof *generation* follow
RFC 9162's recursive definitions (§2.1.1, §2.1.3.1, §2.1.4.1), the *verification* its iterative
algorithms (§2.1.3.2, §2.1.4.2), and both are checked against the reference values of
github.com/transparency-dev/merkle (copied below) before anything is written. Every valid
vector is verified and every bad one is shown to fail, with the reason the vector names, before
the file is written.

A bad case's `why` starts with the reason prefix a verifier must fail with (`malformed`,
`bad signature`, `untrusted key`, `inclusion`, `consistency`), then a colon and what is wrong.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

OUT = Path(__file__).resolve().with_name("tlog.json")

# ---------------------------------------------------------------------------------------------
# Reference values (known answers), copied from github.com/transparency-dev/merkle at commit
# 417fb0c314750d94e53942e9f92e79b6d35915db (2026-07-23). These are the RFC 6962 / Certificate
# Transparency reference leaves used by every CT implementation's tests.
# ---------------------------------------------------------------------------------------------

# testonly/constants.go, LeafInputs()
REF_LEAVES_HEX = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                  "606162636465666768696a6b6c6d6e6f"]

# testonly/constants.go, RootHashes(): index = tree size, 0..8 (EmptyRootHash() for 0)
REF_ROOTS_HEX = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]

# testonly/constants.go, NodeHashes(): [level][index] of every complete subtree of the 8 leaves
REF_NODE_HASHES_HEX = [
    ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
     "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
     "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
     "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
     "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
     "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
     "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
     "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1"],
    ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
     "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
     "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
     "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"],
    ["d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
     "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    ["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
]

# cmd/proofgen/main.go, inclusionProofs: (leafIdx, size, proof). proofgen's leafIdx is 1-based
# (it hashes leaves[p.leafIdx-1]); testdata/inclusion/1/happy-path.json has the same proof with
# "leafIdx": 0, "treeSize": 8. Converted to 0-based leaf indexes here.
REF_INCLUSION = [
    (0, 1, []),
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]

# cmd/proofgen/main.go, consistencyProofs: (size1, size2, proof)
REF_CONSISTENCY = [
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
    (6, 7, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
]

# rfc6962/rfc6962_test.go, TestRFC6962Hasher: (what, expected SHA-256 hex)
REF_HASHER = {
    "empty root": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "leaf ''": "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "leaf 'L123456'": "395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56",
    "node('N123','N456')": "aa217fe888e47007fa15edab33c2b492a722cb106c64667fc2b044444de66bbb",
}

# C2SP signed-note (github.com/C2SP/C2SP, signed-note.md, "Example", at commit
# 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9): this vkey verifies this note. Not a checkpoint,
# so it is only a self-check of the note code here, not a vector.
C2SP_EXAMPLE_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
C2SP_EXAMPLE_NOTE = (
    "This is an example message.\n\n"
    "\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)

SOURCES = [
    "RFC 9162 (Certificate Transparency 2.0) §2.1: Merkle tree hash, inclusion proofs (PATH, §2.1.3), "
    "consistency proofs (PROOF, §2.1.4), and their verification algorithms",
    "github.com/transparency-dev/merkle @ 417fb0c314750d94e53942e9f92e79b6d35915db: testonly/constants.go "
    "(LeafInputs, NodeHashes, RootHashes), cmd/proofgen/main.go (inclusionProofs, consistencyProofs), "
    "rfc6962/rfc6962_test.go (hasher known answers): the rfc9162 section's leaves, roots and those proofs "
    "equal these reference values (asserted by make_tlog_vectors.py)",
    "c2sp.org/signed-note and c2sp.org/tlog-checkpoint (github.com/C2SP/C2SP @ "
    "5ba5ee830903e91240fc6f9f3a7a9293d49e69c9): note format, Ed25519 key id, vkey; the signed-note "
    "example (example.com/foo+530d903a) verifies with the generator's note code",
    "docs/JOURNAL.md, \"The hash\": the journal section's lines form a valid journal_hash chain",
]

EM_DASH = "\u2014"
MAX_SIGNATURES = 16


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


# ---------------------------------------------------------------------------------------------
# RFC 9162 §2.1: hashing and proof generation, by the recursive definitions.
# ---------------------------------------------------------------------------------------------


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """The largest power of two smaller than n (n >= 2)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


class Tree:
    """D[0:n] for every n up to len(leaves), with memoized subtree hashes MTH(D[a:b])."""

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self.leaves = list(leaves)
        self.hashes = [leaf_hash(x) for x in self.leaves]
        self._memo: Dict[Tuple[int, int], bytes] = {}

    def mth(self, a: int, b: int) -> bytes:
        """MTH(D[a:b]) (§2.1.1)."""
        n = b - a
        if n == 0:
            return hashlib.sha256(b"").digest()
        if n == 1:
            return self.hashes[a]
        key = (a, b)
        if key not in self._memo:
            k = split_point(n)
            self._memo[key] = node_hash(self.mth(a, a + k), self.mth(a + k, b))
        return self._memo[key]

    def root(self, n: int) -> bytes:
        return self.mth(0, n)

    def path(self, m: int, a: int, b: int) -> List[bytes]:
        """PATH(m, D[a:b]) (§2.1.3.1), m relative to a."""
        n = b - a
        if n == 1:
            return []
        k = split_point(n)
        if m < k:
            return self.path(m, a, a + k) + [self.mth(a + k, b)]
        return self.path(m - k, a + k, b) + [self.mth(a, a + k)]

    def inclusion(self, m: int, n: int) -> List[bytes]:
        assert 0 <= m < n <= len(self.leaves)
        return self.path(m, 0, n)

    def subproof(self, m: int, a: int, b: int, whole: bool) -> List[bytes]:
        """SUBPROOF(m, D[a:b], b) (§2.1.4.1), m relative to a; `whole` is the flag b."""
        n = b - a
        if m == n:
            return [] if whole else [self.mth(a, b)]
        k = split_point(n)
        if m <= k:
            return self.subproof(m, a, a + k, whole) + [self.mth(a + k, b)]
        return self.subproof(m - k, a + k, b, False) + [self.mth(a, a + k)]

    def consistency(self, m: int, n: int) -> List[bytes]:
        assert 1 <= m <= n <= len(self.leaves)
        return self.subproof(m, 0, n, True)


# ---------------------------------------------------------------------------------------------
# RFC 9162 §2.1.3.2 and §2.1.4.2: verification, by the iterative algorithms (a second,
# independent implementation: it must agree with the recursive generator above).
# ---------------------------------------------------------------------------------------------


class Rejected(Exception):
    """A verification failure; str() starts with the reason prefix."""


def root_from_inclusion(lh: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    if any(len(p) != 32 for p in proof) or len(lh) != 32:
        raise Rejected("malformed: a hash is not 32 bytes")
    if index < 0 or size < 0:
        raise Rejected("malformed: negative index or size")
    if index >= size:
        raise Rejected(f"inclusion: leaf index {index} is not below tree size {size}")
    fn, sn, r = index, size - 1, lh
    for p in proof:
        if sn == 0:
            raise Rejected("inclusion: the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise Rejected("inclusion: the proof is shorter than the path to the root")
    return r


def verify_inclusion(lh: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    if root_from_inclusion(lh, index, size, proof) != root:
        raise Rejected("inclusion: the proof does not lead to the root hash")


def verify_consistency(m: int, n: int, root1: bytes, root2: bytes, proof: Sequence[bytes]) -> None:
    if any(len(p) != 32 for p in proof) or len(root1) != 32 or len(root2) != 32:
        raise Rejected("malformed: a hash is not 32 bytes")
    if m < 1:
        raise Rejected(f"consistency: from size {m} (a consistency proof needs 1 <= from)")
    if m > n:
        raise Rejected(f"consistency: from size {m} is above to size {n} (the log shrank)")
    if m == n:
        if proof:
            raise Rejected("consistency: equal sizes take an empty proof")
        if root1 != root2:
            raise Rejected("consistency: two different roots for the same size (a fork)")
        return
    if not proof:
        raise Rejected("consistency: empty proof between different sizes")
    path = list(proof)
    if m & (m - 1) == 0:
        path.insert(0, root1)
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Rejected("consistency: the proof is too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise Rejected("consistency: the proof is too short")
    if fr != root1:
        raise Rejected("consistency: the proof does not lead to the old root")
    if sr != root2:
        raise Rejected("consistency: the proof does not lead to the new root")


# ---------------------------------------------------------------------------------------------
# C2SP signed-note / tlog-checkpoint, Ed25519.
# ---------------------------------------------------------------------------------------------


def key_id(name: str, pub: bytes) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\n\x01" + pub).digest()[:4]


def public_bytes(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def vkey_of(name: str, key: Ed25519PrivateKey) -> str:
    pub = public_bytes(key)
    return name + "+" + key_id(name, pub).hex() + "+" + b64(b"\x01" + pub)


def signature_line(name: str, key: Ed25519PrivateKey, text: str, *, kid: Optional[bytes] = None) -> str:
    sig = key.sign(text.encode("utf-8"))
    kid = key_id(name, public_bytes(key)) if kid is None else kid
    return f"{EM_DASH} {name} {b64(kid + sig)}\n"


def checkpoint_text(origin: str, size: int, root: bytes, extensions: Sequence[str] = ()) -> str:
    return "".join(line + "\n" for line in [origin, str(size), b64(root), *extensions])


def sign_note(text: str, signers: Sequence[Tuple[str, Ed25519PrivateKey]]) -> str:
    return text + "\n" + "".join(signature_line(name, key, text) for name, key in signers)


def parse_vkey(vkey: str) -> Tuple[str, bytes, bytes]:
    parts = vkey.split("+", 2)  # the base64 key may itself hold "+"
    if len(parts) != 3 or not parts[0] or len(parts[1]) != 8:
        raise Rejected("malformed: vkey is not name+id+key")
    name, hexid, keyb64 = parts
    try:
        kid = bytes.fromhex(hexid)
        key = unb64(keyb64)
    except ValueError:
        raise Rejected("malformed: vkey id or key does not decode") from None
    if hexid != hexid.lower() or len(key) != 33 or key[0] != 1:
        raise Rejected("malformed: vkey is not an Ed25519 key")
    if key_id(name, key[1:]) != kid:
        raise Rejected("malformed: vkey id does not match its name and key")
    return name, kid, key[1:]


def open_note(note: str, vkey: str) -> str:
    """The note's text once a signature of the vkey's key verifies (C2SP signed-note)."""
    name, kid, pub = parse_vkey(vkey)
    if any(ord(c) < 0x20 and c != "\n" for c in note):
        raise Rejected("malformed: a control character other than newline")
    if not note.endswith("\n"):
        raise Rejected("malformed: the note does not end with a newline")
    cut = note.rfind("\n\n")
    if cut < 0:
        raise Rejected("malformed: no blank line between the text and the signatures")
    text, sig_lines = note[:cut + 1], note[cut + 2:].split("\n")[:-1]
    if not sig_lines:
        raise Rejected("malformed: no signature lines")
    if len(sig_lines) > MAX_SIGNATURES:
        raise Rejected("malformed: more than 16 signatures")
    found = False
    for line in sig_lines:
        if not line.startswith(EM_DASH + " "):
            raise Rejected("malformed: a signature line does not start with an em dash and a space")
        fields = line[2:].split(" ")
        if len(fields) != 2 or not fields[0]:
            raise Rejected("malformed: a signature line is not name and signature")
        try:
            blob = unb64(fields[1])
        except ValueError:
            raise Rejected("malformed: a signature is not base64") from None
        if len(blob) < 5:
            raise Rejected("malformed: a signature is too short")
        if fields[0] != name or blob[:4] != kid:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(blob[4:], text.encode("utf-8"))
        except InvalidSignature:
            raise Rejected(f"bad signature: the signature of {name} does not verify") from None
        found = True
    if not found:
        raise Rejected(f"untrusted key: no signature of {name}+{kid.hex()}")
    return text


def open_checkpoint(note: str, vkey: str) -> Tuple[str, int, bytes]:
    """The signature first (the text means nothing until it verifies), then the checkpoint
    text's format (malformed), then its origin against the key's name (untrusted key)."""
    text = open_note(note, vkey)
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not line for line in lines):
        raise Rejected("malformed: not origin, size, root hash and non-empty extension lines")
    origin, size, root = lines[:3]
    if not size.isascii() or not size.isdigit() or (size != "0" and size.startswith("0")):
        raise Rejected("malformed: the tree size is not a decimal without leading zeros")
    try:
        root_hash = unb64(root)
    except ValueError:
        raise Rejected("malformed: the root hash is not base64") from None
    if len(root_hash) != 32:
        raise Rejected("malformed: the root hash is not 32 bytes")
    name = parse_vkey(vkey)[0]
    if origin != name:
        raise Rejected(f"untrusted key: the origin {origin!r} is not the key's name {name!r}")
    return origin, int(size), root_hash


# ---------------------------------------------------------------------------------------------
# The vectors.
# ---------------------------------------------------------------------------------------------

ORIGIN = "sovereign-gateway/journal/vectors-1"
KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"sovereign-gateway tlog vectors: key 1").digest())
OTHER_NAME = "sovereign-gateway/journal/vectors-other"
OTHER_KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"sovereign-gateway tlog vectors: key 2").digest())
VKEY = vkey_of(ORIGIN, KEY)

GENERATED_LEAVES = 70
GENERATED_SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 69, 70]


def tree_section(tree: Tree, inclusion: Sequence[Tuple[int, int]], consistency: Sequence[Tuple[int, int]],
                 roots: Sequence[int]) -> dict:
    return {
        "leaves_hex": [x.hex() for x in tree.leaves],
        "roots": [{"tree_size": n, "root_hash": b64(tree.root(n))} for n in roots],
        "inclusion": [{"leaf_index": i, "tree_size": n, "hashes": [b64(h) for h in tree.inclusion(i, n)]}
                      for i, n in inclusion],
        "consistency": [{"from": m, "to": n, "hashes": [b64(h) for h in tree.consistency(m, n)]}
                        for m, n in consistency],
    }


def check_reference(ref: Tree) -> None:
    assert leaf_hash(b"").hex() == REF_HASHER["leaf ''"]
    assert leaf_hash(b"L123456").hex() == REF_HASHER["leaf 'L123456'"]
    assert node_hash(b"N123", b"N456").hex() == REF_HASHER["node('N123','N456')"]
    assert ref.root(0).hex() == REF_HASHER["empty root"]
    for n, want in enumerate(REF_ROOTS_HEX):
        assert ref.root(n).hex() == want, f"root of size {n}"
    for level, row in enumerate(REF_NODE_HASHES_HEX):
        for i, want in enumerate(row):
            width = 1 << level
            assert ref.mth(i * width, (i + 1) * width).hex() == want, f"node {level}/{i}"
    for i, n, want in REF_INCLUSION:
        assert [h.hex() for h in ref.inclusion(i, n)] == want, f"inclusion {i}/{n}"
        verify_inclusion(ref.hashes[i], i, n, [bytes.fromhex(h) for h in want], ref.root(n))
    for m, n, want in REF_CONSISTENCY:
        assert [h.hex() for h in ref.consistency(m, n)] == want, f"consistency {m}/{n}"
        verify_consistency(m, n, ref.root(m), ref.root(n), [bytes.fromhex(h) for h in want])
    assert open_note(C2SP_EXAMPLE_NOTE, C2SP_EXAMPLE_VKEY) == "This is an example message.\n"
    tampered = C2SP_EXAMPLE_NOTE.replace("example message", "exemplary message")
    assert rejected_with(lambda: open_note(tampered, C2SP_EXAMPLE_VKEY)) == "bad signature"


def rejected_with(call: Callable[[], object]) -> Optional[str]:
    try:
        call()
    except Rejected as e:
        return str(e).split(":")[0]
    return None


def flip(h: bytes, bit: int = 0) -> bytes:
    return h[:bit // 8] + bytes([h[bit // 8] ^ (1 << (bit % 8))]) + h[bit // 8 + 1:]


def bad_inclusion(tree: Tree) -> List[dict]:
    t = tree

    def case(leaf: bytes, i: int, n: int, root: bytes, proof: Sequence[bytes], why: str) -> dict:
        return {"leaf_hex": leaf.hex(), "leaf_index": i, "tree_size": n, "root_hash": b64(root),
                "hashes": [b64(h) for h in proof], "why": why}

    p = t.inclusion(5, 20)
    cases = [
        case(t.leaves[5], 4, 20, t.root(20), p, "inclusion: wrong leaf index (the proof of index 5 given index 4)"),
        case(t.leaves[5], 6, 20, t.root(20), p, "inclusion: wrong leaf index (the proof of index 5 given index 6)"),
        case(t.leaves[5], 5, 21, t.root(21), p, "inclusion: wrong tree size (the proof for size 20 checked as size 21)"),
        case(t.leaves[5], 5, 19, t.root(19), p, "inclusion: wrong tree size (the proof for size 20 checked as size 19)"),
        case(t.leaves[5], 5, 20, t.root(21), p, "inclusion: the root hash of another tree size (21)"),
        case(t.leaves[5], 5, 20, t.root(20), [p[0], flip(p[1], 77)] + p[2:], "inclusion: one bit flipped in a proof hash"),
        case(t.leaves[5], 5, 20, t.root(20), p + [t.hashes[7]], "inclusion: an extra hash appended to the proof"),
        case(t.leaves[5], 5, 20, t.root(20), [t.hashes[7]] + p, "inclusion: an extra hash prepended to the proof"),
        case(t.leaves[5], 5, 20, t.root(20), p[:-1], "inclusion: the proof's last hash missing"),
        case(t.leaves[5], 5, 20, t.root(20), p[1:], "inclusion: the proof's first hash missing"),
        case(t.leaves[5], 5, 20, t.root(20), [p[1], p[0]] + p[2:], "inclusion: two proof hashes swapped"),
        case(t.leaves[6], 5, 20, t.root(20), p, "inclusion: the leaf of a different line (leaf 6 with the proof of leaf 5)"),
        case(t.leaves[5] + b"\n", 5, 20, t.root(20), p, "inclusion: the leaf with a trailing newline hashed (the leaf is the line without it)"),
        case(t.leaves[19], 20, 20, t.root(20), t.inclusion(19, 20), "inclusion: leaf index equal to the tree size"),
        case(t.leaves[3], 35, 20, t.root(20), t.inclusion(3, 20), "inclusion: leaf index above the tree size"),
        case(t.leaves[0], 0, 0, t.root(0), [], "inclusion: tree size 0 has no leaves"),
        case(t.leaves[0], 0, 1, t.root(1), [t.hashes[1]], "inclusion: a one-leaf tree with a non-empty proof"),
        case(t.leaves[64], 64, 65, t.root(65), [], "inclusion: an empty proof in a tree of 65 leaves"),
        case(t.leaves[0], 0, 1, t.root(2), [], "inclusion: the leaf hash is not the root it is checked against"),
        case(t.leaves[31], 31, 64, t.root(64), t.inclusion(31, 33), "inclusion: the proof of a smaller tree (33) against a root of 64"),
        case(t.leaves[5], 5, 20, t.root(20), [p[0][:31]] + p[1:], "malformed: a proof hash of 31 bytes"),
    ]
    return cases


def bad_consistency(tree: Tree) -> List[dict]:
    t = tree

    def case(m: int, n: int, r1: bytes, r2: bytes, proof: Sequence[bytes], why: str) -> dict:
        return {"from": m, "to": n, "root1": b64(r1), "root2": b64(r2), "hashes": [b64(h) for h in proof],
                "why": why}

    p = t.consistency(7, 20)
    p8 = t.consistency(8, 20)
    return [
        case(20, 7, t.root(20), t.root(7), p, "consistency: from above to (the log shrank)"),
        case(10, 7, t.root(10), t.root(7), [], "consistency: from above to with an empty proof"),
        case(7, 20, t.root(6), t.root(20), p, "consistency: wrong old root (root1 of size 6)"),
        case(7, 20, t.root(7), t.root(21), p, "consistency: wrong new root (root2 of size 21)"),
        case(7, 20, flip(t.root(7), 3), t.root(20), p, "consistency: one bit flipped in root1"),
        case(7, 20, t.root(7), flip(t.root(20), 255), p, "consistency: one bit flipped in root2"),
        case(7, 20, t.root(7), t.root(20), p[:-1], "consistency: the proof truncated (last hash missing)"),
        case(7, 20, t.root(7), t.root(20), p[1:], "consistency: the proof's first hash missing"),
        case(7, 20, t.root(7), t.root(20), p + [t.hashes[0]], "consistency: an extra hash appended"),
        case(7, 20, t.root(7), t.root(20), [p[0], flip(p[1], 100)] + p[2:], "consistency: one bit flipped in a proof hash"),
        case(7, 21, t.root(7), t.root(21), p, "consistency: the proof for 7->20 checked as 7->21"),
        case(6, 20, t.root(6), t.root(20), p, "consistency: the proof for 7->20 checked as 6->20"),
        case(8, 20, t.root(8), t.root(20), [t.root(8)] + p8, "consistency: the old root prepended for a power-of-two from (RFC 9162 leaves it out)"),
        case(8, 20, t.root(8), t.root(20), [], "consistency: an empty proof between different sizes"),
        case(12, 12, t.root(12), t.root(12), [t.hashes[3]], "consistency: equal sizes with a non-empty proof"),
        case(12, 12, t.root(12), t.root(11), [], "consistency: equal sizes, different roots (a fork)"),
        case(0, 5, t.root(0), t.root(5), [], "consistency: from 0 (proofs start at size 1; the API refuses from=0)"),
        case(7, 20, t.root(7), t.root(20), [p[0][:16]] + p[1:], "malformed: a proof hash of 16 bytes"),
    ]


def notes_section(gen: Tree, ref: Tree) -> dict:
    def valid(text_origin: str, n: int, root: bytes, signers, extensions: Sequence[str] = ()) -> dict:
        note = sign_note(checkpoint_text(text_origin, n, root, extensions), signers)
        return {"vkey": VKEY, "note": note, "origin": text_origin, "tree_size": n, "root_hash": b64(root)}

    me = (ORIGIN, KEY)
    other = (OTHER_NAME, OTHER_KEY)
    good = [
        valid(ORIGIN, 0, gen.root(0), [me]),
        valid(ORIGIN, 1, gen.root(1), [me]),
        valid(ORIGIN, 8, ref.root(8), [me]),
        valid(ORIGIN, 70, gen.root(70), [me]),
        valid(ORIGIN, 33, gen.root(33), [other, me]),
        valid(ORIGIN, 16, gen.root(16), [me, other]),
        valid(ORIGIN, 17, gen.root(17), [me], ["ext: an opaque extension line"]),
    ]
    # A signature line by an unknown key that shares the vkey's name (but not its id) is ignored.
    text = checkpoint_text(ORIGIN, 9, gen.root(9))
    impostor = signature_line(ORIGIN, OTHER_KEY, text)
    good.append({"vkey": VKEY, "note": text + "\n" + impostor + signature_line(ORIGIN, KEY, text),
                 "origin": ORIGIN, "tree_size": 9, "root_hash": b64(gen.root(9))})

    def bad(note: str, why: str) -> dict:
        return {"vkey": VKEY, "note": note, "why": why}

    def signed(text: str, signers=(me,)) -> str:
        return sign_note(text, signers)

    base_text = checkpoint_text(ORIGIN, 12, gen.root(12))
    base = signed(base_text)
    sig_line = base[len(base_text) + 1:]
    blob = bytearray(unb64(sig_line.rstrip("\n").split(" ")[2]))
    blob[4 + 10] ^= 0x01
    bad_sig = base_text + "\n" + f"{EM_DASH} {ORIGIN} {b64(bytes(blob))}\n"
    wrong_id = bytes(a ^ b for a, b in zip(key_id(ORIGIN, public_bytes(KEY)), b"\x00\x00\x00\x01"))
    many = base_text + "\n" + signature_line(OTHER_NAME, OTHER_KEY, base_text) * 16 + sig_line
    invalid = [
        bad(bad_sig, "bad signature: one byte of the Ed25519 signature flipped"),
        bad(signed(base_text, [other]), "untrusted key: signed only by another key (another name and key id)"),
        bad(base_text + "\n" + signature_line(ORIGIN, KEY, base_text, kid=wrong_id),
            "untrusted key: the key's name with a wrong key id (an unknown key: ignored, so no known signature)"),
        bad(base_text + "\n" + signature_line(OTHER_NAME, KEY, base_text),
            "untrusted key: the key signed under another name (an unknown key: ignored)"),
        bad(signed(checkpoint_text("sovereign-gateway/journal/vectors-2", 12, gen.root(12))),
            "untrusted key: the origin is not the key's name (though the key's signature verifies)"),
        bad(base_text.replace("\n12\n", "\n13\n", 1) + base[len(base_text):],
            "bad signature: the text modified after signing (tree size 12 -> 13)"),
        bad(base_text.replace(b64(gen.root(12)), b64(gen.root(11)), 1) + base[len(base_text):],
            "bad signature: the text modified after signing (another root hash)"),
        bad(base + signature_line(ORIGIN, KEY, base_text.replace("\n12\n", "\n13\n", 1)),
            "bad signature: a second signature by the key that does not verify (a failing known-key signature rejects the note)"),
        bad(signed(f"{ORIGIN}\n012\n{b64(gen.root(12))}\n"), "malformed: tree size with a leading zero"),
        bad(signed(f"{ORIGIN}\n-1\n{b64(gen.root(12))}\n"), "malformed: a negative tree size"),
        bad(signed(f"{ORIGIN}\n+12\n{b64(gen.root(12))}\n"), "malformed: a tree size with a plus sign"),
        bad(signed(f"{ORIGIN}\n12\n{b64(gen.root(12)[:31])}\n"), "malformed: root hash of 31 bytes"),
        bad(signed(f"{ORIGIN}\n12\n{b64(gen.root(12) + b'x')}\n"), "malformed: root hash of 33 bytes"),
        bad(signed(f"{ORIGIN}\n12\n{gen.root(12).hex()}\n"), "malformed: root hash in hex, not base64"),
        bad(signed(f"{ORIGIN}\n12\n"), "malformed: no root hash line"),
        bad(base_text + sig_line, "malformed: no blank line between the text and the signature"),
        bad(base_text + "\n", "malformed: no signature lines"),
        bad(base[:-1], "malformed: the last signature line does not end with a newline"),
        bad(signed(f"{ORIGIN}\n12\r\n{b64(gen.root(12))}\n"), "malformed: a control character (CR: a CRLF line end)"),
        bad(signed(f"{ORIGIN}\n12\n{b64(gen.root(12))}\next\tvalue\n"), "malformed: a control character (tab) in an extension line"),
        bad(signed(f"{ORIGIN}\n12\n{b64(gen.root(12))}\n\next\n"), "malformed: an empty line in the checkpoint text"),
        bad(base_text + "\n" + f"- {ORIGIN} {sig_line.split(' ')[2]}", "malformed: a signature line with a hyphen, not an em dash"),
        bad(many, "malformed: 17 signature lines (at most 16)"),
    ]
    return {"valid": good, "invalid": invalid}


# -- the journal section ------------------------------------------------------------------------

GENESIS = "sha256:" + "0" * 64
TEAM = "team_0190f1c2a7b37c3e8d4f5a6b7c8d9e0f"
KEYS = {"member": "key_0190f1c2a7b47d1e9a2b3c4d5e6f7a8b", "admin": "key_0190f1c2a7b57e2f8b3c4d5e6f7a8b9c",
        "auditor": "key_0190f1c2a7b67f3a9c4d5e6f7a8b9cad"}


def jcs(value: object) -> bytes:
    # docs/JOURNAL.md: for these value types (strings, integers, null) this is RFC 8785.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def prompt_hash(messages: list) -> str:
    return "sha256:" + hashlib.sha256(jcs(messages)).hexdigest()


def journal_entries(fork_at: Optional[int] = None) -> List[dict]:
    """14 entries; with fork_at, entry fork_at (0-based) says something else and the chain is
    recomputed from there (a history the same key could sign instead)."""
    chat = "chat.completions"
    rows = [
        # actor, key, action, model, messages, policy, region, status, p, c, latency
        ("amira", "member", chat, "jais-30b-chat", [{"role": "user", "content": "مرحبا، كيف حالك؟"}],
         "sovereign-default", "sa-riyadh-1", "success", 14, 22, 183250),
        ("amira", "member", chat, "llama-3.2-3b-instruct", [{"role": "user", "content": "hi"}],
         "sovereign-default", "sa-riyadh-1", "success", 8, 12, 95011),
        ("ops-bot", "member", "embeddings", "bge-m3", ["quarterly report, section 2"], "explicit-model",
         "sa-riyadh-1", "success", 6, None, 20400),
        ("ملك", "member", chat, "jais-30b-chat", [{"role": "user", "content": "لخص هذا العقد"}],
         "sovereign-default", "sa-riyadh-1", "success", 311, 140, 912044),
        ("amira", "member", chat, None, [{"role": "user", "content": "card 4111 1111 1111 1111"}],
         None, None, "blocked", None, None, 1830),
        ("jean", "member", chat, "magistral-small", [{"role": "user", "content": "Résume ce texte, s'il te plaît."}],
         "sovereign-default", "eu-paris-1", "success", 19, 48, 402133),
        (KEYS["auditor"], "auditor", "activity.logs", None, None, None, None, "success", None, None, 7420),
        ("amira", "member", chat, None, [{"role": "user", "content": "classified: keep local"}],
         None, None, "rejected", None, None, 950),
        (KEYS["admin"], "admin", "admin.policies.list", None, None, None, None, "success", None, None, 3105),
        ("ops-bot", "member", chat, "qwen2.5-coder-32b", [{"role": "user", "content": "fn main() {} // explain"}],
         "sovereign-default", "eu-frankfurt-1", "success", 702, 260, 1520007),
        ("amira", "member", chat, "llama-3.2-3b-instruct", [{"role": "user", "content": "quote \"this\" \\ and a\ttab"}],
         "sovereign-default", "sa-riyadh-1", "error", 11, None, 30000512),
        (KEYS["admin"], "admin", "GET /v1/activity/checkpoint", None, None, None, None, "success", None, None, 2210),
        ("amira", "member", chat, "jais-30b-chat", [{"role": "user", "content": "شكرا"}],
         "sovereign-default", "sa-riyadh-1", "success", 5, 9, 120774),
        (KEYS["auditor"], "auditor", "GET /v1/activity/proof", None, None, None, None, "success", None, None, 1984),
    ]
    entries, prev = [], GENESIS
    for i, (actor, role, action, model, messages, policy, region, status, pt, ct, lat) in enumerate(rows):
        if fork_at is not None and i == fork_at:
            model, status, ct = "qwen2.5-coder-32b", "success", (ct or 0) + 1
        entry = {
            "seq": i + 1,
            "prev_hash": prev,
            "timestamp": f"2026-11-22T21:{31 + i // 4:02d}:{(7 * i + 3) % 60:02d}.{(137 * i) % 1000:03d}Z",
            "request_id": "req-" + hashlib.sha256(f"vectors request {i}".encode()).hexdigest()[:32],
            "actor_id": actor,
            "team_id": TEAM,
            "key_id": KEYS[role],
            "action": action,
            "model": model,
            "prompt_hash": prompt_hash(messages) if messages is not None else None,
            "routing_policy": policy,
            "residency_boundary": region,
            "status": status,
            "prompt_tokens": pt,
            "completion_tokens": ct,
            "latency_us": lat,
        }
        entry["journal_hash"] = "sha256:" + hashlib.sha256(prev.encode("utf-8") + jcs(entry)).hexdigest()
        prev = entry["journal_hash"]
        entries.append(entry)
    return entries


def check_chain(entries: Sequence[dict]) -> None:
    prev = GENESIS
    for n, e in enumerate(entries, 1):
        rest = {k: v for k, v in e.items() if k != "journal_hash"}
        assert e["seq"] == n and e["prev_hash"] == prev
        assert e["journal_hash"] == "sha256:" + hashlib.sha256(prev.encode() + jcs(rest)).hexdigest()
        prev = e["journal_hash"]


def journal_section() -> dict:
    given = 12
    entries = journal_entries()
    check_chain(entries)
    lines = [jcs(e).decode("utf-8") for e in entries]  # a line is the entry's RFC 8785 encoding
    tree = Tree([line.encode("utf-8") for line in lines])
    forked_entries = journal_entries(fork_at=9)
    check_chain(forked_entries)
    forked = Tree([jcs(e) for e in forked_entries])
    assert forked.root(given) != tree.root(given) and forked.root(9) == tree.root(9)

    def note(t: Tree, n: int, signers=((ORIGIN, KEY),)) -> str:
        return sign_note(checkpoint_text(ORIGIN, n, t.root(n)), signers)

    def inc(i: int, n: int, t: Tree = tree) -> dict:
        return {"leaf_index": i, "tree_size": n, "hashes": [b64(h) for h in t.inclusion(i, n)]}

    def con(m: int, n: int) -> dict:
        return {"from": m, "to": n, "hashes": [b64(h) for h in tree.consistency(m, n)]}

    sizes = [7, given]
    notes = {n: note(tree, n) for n in sizes}
    inclusion = [inc(i, n) for n in sizes for i in range(n)]
    consistency = [con(7, 12), con(7, 7), con(12, 12)]

    edited = dict(entries[3])
    edited["status"], edited["completion_tokens"] = "blocked", None
    rest = {k: v for k, v in edited.items() if k != "journal_hash"}
    edited["journal_hash"] = "sha256:" + hashlib.sha256(edited["prev_hash"].encode() + jcs(rest)).hexdigest()
    tampered_line = jcs(edited).decode("utf-8")

    p4 = inc(4, 12)
    p4_flipped = dict(p4, hashes=[p4["hashes"][0], b64(flip(unb64(p4["hashes"][1]), 9))] + p4["hashes"][2:])
    c = con(7, 12)
    c_flipped = dict(c, hashes=c["hashes"][:-1] + [b64(flip(unb64(c["hashes"][-1]), 200))])
    forked_note = note(forked, given)
    truncated_note = note(tree, 14)
    other_signed = sign_note(checkpoint_text(ORIGIN, given, tree.root(given)), [(OTHER_NAME, OTHER_KEY)])

    def bad_inc(line: str, proof: dict, cp: str, why: str) -> dict:
        return {"kind": "inclusion", "line": line, "proof": proof, "note": cp, "why": why}

    def bad_con(old: str, new: str, proof: dict, why: str) -> dict:
        return {"kind": "consistency", "old_note": old, "new_note": new, "proof": proof, "why": why}

    bad = [
        bad_inc(tampered_line, inc(3, 12), notes[12],
                "inclusion: line 4 edited after it was logged (status success -> blocked, its journal_hash recomputed so the chain link looks fine)"),
        bad_inc(lines[4], p4_flipped, notes[12], "inclusion: one bit flipped in the proof"),
        bad_inc(lines[4], dict(p4, leaf_index=5), notes[12], "inclusion: the proof's leaf_index changed (line 5 claimed at index 5)"),
        bad_inc(lines[5], inc(4, 12), notes[12], "inclusion: the proof of another line (line 5's proof given for line 6)"),
        bad_inc(lines[2], inc(2, 7), notes[12], "inclusion: a proof for tree size 7 with the checkpoint of size 12"),
        bad_inc(lines[9], inc(9, 12), forked_note,
                "inclusion: a forked checkpoint (validly signed, size 12, over a history where line 10 differs)"),
        bad_inc(lines[11], inc(11, 12), truncated_note,
                "inclusion: a truncated log (the checkpoint says 14 entries, the log gives a proof over 12)"),
        bad_inc(lines[0], inc(0, 12), other_signed, "untrusted key: the checkpoint is signed by another key"),
        bad_con(notes[7], notes[12], c_flipped, "consistency: one bit flipped in the proof"),
        bad_con(notes[7], notes[12], dict(c, hashes=c["hashes"][:-1]), "consistency: the proof truncated"),
        bad_con(notes[7], forked_note, c, "consistency: a forked checkpoint (size 12 over a history where line 10 differs)"),
        bad_con(notes[12], forked_note, {"from": 12, "to": 12, "hashes": []},
                "consistency: two validly signed checkpoints of size 12 with different roots (a fork)"),
        bad_con(truncated_note, notes[12], {"from": 14, "to": 12, "hashes": []},
                "consistency: a truncated log (a checkpoint of 14 seen before, now 12)"),
        bad_con(notes[7], notes[12], dict(c, to=14), "consistency: the proof's sizes (7 -> 14) are not the checkpoints' (7 -> 12)"),
    ]
    return {
        "vkey": VKEY,
        "lines": lines[:given],
        "checkpoints": [{"tree_size": n, "note": notes[n]} for n in sizes],
        "inclusion": inclusion,
        "consistency": consistency,
        "bad": bad,
    }


# -- self-checks of everything written ------------------------------------------------------------


def expect(why: str) -> str:
    return why.split(":")[0]


def self_check(doc: dict) -> None:
    for section in ("rfc9162", "generated"):
        s = doc[section]
        t = Tree([bytes.fromhex(x) for x in s["leaves_hex"]])
        roots = {r["tree_size"]: unb64(r["root_hash"]) for r in s["roots"]}
        for p in s["inclusion"]:
            i, n = p["leaf_index"], p["tree_size"]
            verify_inclusion(t.hashes[i], i, n, [unb64(h) for h in p["hashes"]], roots[n])
        for p in s["consistency"]:
            m, n = p["from"], p["to"]
            verify_consistency(m, n, roots[m], roots[n], [unb64(h) for h in p["hashes"]])
    for c in doc["bad_inclusion"]:
        got = rejected_with(lambda: verify_inclusion(
            leaf_hash(bytes.fromhex(c["leaf_hex"])), c["leaf_index"], c["tree_size"],
            [unb64(h) for h in c["hashes"]], unb64(c["root_hash"])))
        assert got == expect(c["why"]), (c["why"], got)
    for c in doc["bad_consistency"]:
        got = rejected_with(lambda: verify_consistency(
            c["from"], c["to"], unb64(c["root1"]), unb64(c["root2"]), [unb64(h) for h in c["hashes"]]))
        assert got == expect(c["why"]), (c["why"], got)
    for c in doc["notes"]["valid"]:
        assert open_checkpoint(c["note"], c["vkey"]) == (c["origin"], c["tree_size"], unb64(c["root_hash"]))
    for c in doc["notes"]["invalid"]:
        got = rejected_with(lambda: open_checkpoint(c["note"], c["vkey"]))
        assert got == expect(c["why"]), (c["why"], got)

    j = doc["journal"]
    check_chain([json.loads(line) for line in j["lines"]])
    notes = {c["tree_size"]: c["note"] for c in j["checkpoints"]}

    def inclusion(line: str, proof: dict, note: str) -> None:
        _, size, root = open_checkpoint(note, j["vkey"])
        if proof["tree_size"] != size:
            raise Rejected("inclusion: the proof's tree size is not the checkpoint's")
        leaf = leaf_hash(line.removesuffix("\n").encode("utf-8"))
        verify_inclusion(leaf, proof["leaf_index"], proof["tree_size"], [unb64(h) for h in proof["hashes"]], root)

    def consistency(old: str, new: str, proof: dict) -> None:
        _, m, r1 = open_checkpoint(old, j["vkey"])
        _, n, r2 = open_checkpoint(new, j["vkey"])
        if (proof["from"], proof["to"]) != (m, n):
            raise Rejected("consistency: the proof's sizes are not the checkpoints'")
        verify_consistency(m, n, r1, r2, [unb64(h) for h in proof["hashes"]])

    for p in j["inclusion"]:
        inclusion(j["lines"][p["leaf_index"]], p, notes[p["tree_size"]])
        inclusion(j["lines"][p["leaf_index"]] + "\n", p, notes[p["tree_size"]])
    for p in j["consistency"]:
        consistency(notes[p["from"]], notes[p["to"]], p)
    for c in j["bad"]:
        if c["kind"] == "inclusion":
            got = rejected_with(lambda: inclusion(c["line"], c["proof"], c["note"]))
        else:
            got = rejected_with(lambda: consistency(c["old_note"], c["new_note"], c["proof"]))
        assert got == expect(c["why"]), (c["why"], got)


def build() -> dict:
    ref = Tree([bytes.fromhex(x) for x in REF_LEAVES_HEX])
    check_reference(ref)
    gen = Tree([f"leaf-{i}".encode("ascii") for i in range(GENERATED_LEAVES)])

    rfc_inclusion = [(i, n) for n in range(1, 9) for i in range(n)]
    rfc_consistency = [(m, n) for n in range(1, 9) for m in range(1, n + 1)]
    gen_inclusion = sorted({(i, n) for n in GENERATED_SIZES
                            for i in (0, 1, n // 2, n - 2, n - 1, 15, 16, 31, 32, 63, 64) if 0 <= i < n},
                           key=lambda p: (p[1], p[0]))
    gen_consistency = sorted({(m, n) for m in GENERATED_SIZES
                              for n in (m, m + 1, 2 * m - 1, 2 * m, 16, 32, 33, 64, 65, 70)
                              if m <= n <= GENERATED_LEAVES},
                             key=lambda p: (p[1], p[0]))

    doc = {
        "about": (
            "Shared test vectors of the activity journal's transparency log (issue 48; /tmp/tlog/SPEC.md, "
            "clients/SPEC.md \"Transparency log proofs (offline)\"). Hashes are base64 (standard, padded), leaf "
            "data hex. leaf hash = SHA-256(0x00 || leaf), node = SHA-256(0x01 || left || right), empty root = "
            "SHA-256(''). rfc9162: the CT reference leaves, every inclusion 0<=i<n<=8 and consistency 1<=m<=n<=8. "
            "generated: leaves 'leaf-<i>' (ASCII) for i < 70. Every bad case must fail; its 'why' starts with "
            "the reason prefix the verifier must give (malformed, bad signature, untrusted key, inclusion, "
            "consistency) and a colon. notes: C2SP tlog-checkpoint signed notes, Ed25519; the key name is the "
            "origin. journal: lines are journal entries (a valid journal_hash chain, docs/JOURNAL.md); leaf i "
            "is lines[i]'s UTF-8 bytes (without a newline), seq i+1. Written by make_tlog_vectors.py; do not "
            "edit by hand."
        ),
        "sources": SOURCES,
        "rfc9162": tree_section(ref, rfc_inclusion, rfc_consistency, range(0, 9)),
        "generated": tree_section(gen, gen_inclusion, gen_consistency, range(0, GENERATED_LEAVES + 1)),
        "bad_inclusion": bad_inclusion(gen),
        "bad_consistency": bad_consistency(gen),
        "notes": notes_section(gen, ref),
        "journal": journal_section(),
    }
    # The reference proofs are among the rfc9162 section's (with the same hashes).
    rfc = doc["rfc9162"]
    for i, n, want in REF_INCLUSION:
        got = next(p for p in rfc["inclusion"] if (p["leaf_index"], p["tree_size"]) == (i, n))
        assert got["hashes"] == [b64(bytes.fromhex(h)) for h in want]
    for m, n, want in REF_CONSISTENCY:
        got = next(p for p in rfc["consistency"] if (p["from"], p["to"]) == (m, n))
        assert got["hashes"] == [b64(bytes.fromhex(h)) for h in want]
    assert [r["root_hash"] for r in rfc["roots"]] == [b64(bytes.fromhex(h)) for h in REF_ROOTS_HEX]
    self_check(doc)
    return doc


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if tlog.json is not what this script writes")
    args = ap.parse_args()
    text = render(build())
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run {Path(__file__).name}", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text.encode('utf-8'))} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
