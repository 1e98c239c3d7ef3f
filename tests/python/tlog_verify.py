"""An independent transparency-log verifier for the end-to-end tests (issue 48): RFC 9162
inclusion (§2.1.3.2) and consistency (§2.1.4.2) verification and C2SP signed-note checkpoints,
written from the specifications with hashlib and `cryptography`'s Ed25519 — not the gateway's
code, nor the client libraries'."""

from __future__ import annotations

import base64
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class Refused(Exception):
    pass


def leaf_hash(line: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + line).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_inclusion(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes:
    if index >= size:
        raise Refused("index beyond the tree")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise Refused("path too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise Refused("path too short")
    return r


def check_consistency(m: int, n: int, root1: bytes, root2: bytes, proof: list[bytes]) -> None:
    if not 0 < m <= n:
        raise Refused("sizes out of order")
    if m == n:
        if proof or root1 != root2:
            raise Refused("same size, different trees")
        return
    path = ([root1] if m & (m - 1) == 0 else []) + list(proof)
    if not path:
        raise Refused("empty proof")
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Refused("proof too long")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if fr != root1 or sr != root2 or sn != 0:
        raise Refused("not a prefix")


def parse_vkey(vkey: str) -> tuple[str, bytes, bytes]:
    """(name, 4-byte key id, 32-byte Ed25519 key) of `<name>+<hex id>+<base64(0x01||key)>`."""
    name, key_id, material = vkey.strip().split("+", 2)
    raw = base64.b64decode(material, validate=True)
    if raw[:1] != b"\x01" or len(raw) != 33:
        raise Refused("not an Ed25519 verifier key")
    want = hashlib.sha256(name.encode() + b"\n\x01" + raw[1:]).digest()[:4]
    if bytes.fromhex(key_id) != want:
        raise Refused("key id does not match the key")
    return name, want, raw[1:]


def check_checkpoint(note: str, vkey: str) -> tuple[str, int, bytes]:
    """Verifies the note's signature by `vkey`; returns (origin, size, root)."""
    name, key_id, key = parse_vkey(vkey)
    text, sep, sigs = note.rpartition("\n\n")
    if not sep or not note.endswith("\n"):
        raise Refused("malformed note")
    text += "\n"
    ok = False
    for line in sigs.rstrip("\n").split("\n"):
        assert line.startswith("\u2014 "), line
        signer, sig = line[2:].split(" ", 1)
        blob = base64.b64decode(sig)
        if signer != name or blob[:4] != key_id:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(blob[4:], text.encode())
        except InvalidSignature as e:
            raise Refused("bad signature") from e
        ok = True
    if not ok:
        raise Refused("no signature of this key")
    origin, size, root = text.rstrip("\n").split("\n")[:3]
    if origin != name:
        raise Refused("origin is not the key's name")
    return origin, int(size), base64.b64decode(root)


def hashes(proof: dict) -> list[bytes]:
    return [base64.b64decode(h) for h in proof["hashes"]]


def check_inclusion(line: bytes, proof: dict, note: str, vkey: str) -> None:
    """`line` (an export line, newline stripped) is leaf `proof["leaf_index"]` of the signed tree."""
    _, size, root = check_checkpoint(note, vkey)
    if size != proof["tree_size"]:
        raise Refused("proof and checkpoint sizes differ")
    got = root_from_inclusion(leaf_hash(line.rstrip(b"\n")), proof["leaf_index"], size, hashes(proof))
    if got != root:
        raise Refused("not in the tree")
