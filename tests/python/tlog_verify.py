"""An independent transparency-log verifier for the end-to-end tests (issue 48): RFC 9162
inclusion (§2.1.3.2) and consistency (§2.1.4.2) verification and C2SP signed-note checkpoints
with Ed25519, written from the specifications with hashlib, base64 and `cryptography` — neither
the gateway's Rust code nor the client libraries'. `test_transparency.py` checks it on trees it
builds itself before it judges the gateway; `test_replicas.py` uses it too."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat



class Rejected(Exception):
    """A checkpoint or proof the verifier refuses."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def mth(leaf_hashes: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1 MTH over leaf hashes (the largest power of two < n splits)."""
    n = len(leaf_hashes)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return leaf_hashes[0]
    k = 1 << ((n - 1).bit_length() - 1)
    return node_hash(mth(leaf_hashes[:k]), mth(leaf_hashes[k:]))


def root_of_lines(lines: list[bytes]) -> bytes:
    return mth([leaf_hash(line) for line in lines])


def root_from_inclusion(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2: the root that `path` proves leaf hash `leaf` at `index` under."""
    if index >= size or index < 0:
        raise Rejected("inclusion: leaf index outside the tree")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise Rejected("inclusion: proof too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise Rejected("inclusion: proof too short")
    return r


def verify_consistency_proof(first: int, second: int, first_hash: bytes, second_hash: bytes,
                             path: list[bytes]) -> None:
    """RFC 9162 §2.1.4.2 (with m == n: an empty proof between equal roots)."""
    if not 1 <= first <= second:
        raise Rejected(f"consistency: sizes {first} → {second}")
    if first == second:
        if path or first_hash != second_hash:
            raise Rejected("consistency: equal sizes need an empty proof and equal roots")
        return
    if not path:
        raise Rejected("consistency: empty proof")
    if first & (first - 1) == 0:  # an exact power of two
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Rejected("consistency: proof too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if fr != first_hash or sr != second_hash or sn != 0:
        raise Rejected("consistency: the old tree is not a prefix of the new one")


@dataclass(frozen=True)
class VKey:
    name: str
    key_id: bytes
    public: bytes  # 32 bytes


def key_id(name: str, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]


def parse_vkey(line: str) -> VKey:
    name, hex_id, material = line.strip("\n").split("+", 2)
    raw = base64.b64decode(material, validate=True)
    if len(raw) != 33 or raw[0] != 0x01:
        raise Rejected("malformed vkey: not an Ed25519 key")
    if len(hex_id) != 8 or hex_id != hex_id.lower() or bytes.fromhex(hex_id) != key_id(name, raw[1:]):
        raise Rejected("malformed vkey: the key id is not the key's")
    return VKey(name, bytes.fromhex(hex_id), raw[1:])


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes


def verify_checkpoint(note: str, vkey: VKey) -> Checkpoint:
    """A C2SP checkpoint signed by `vkey`: accepted iff a signature line of the key's name and id
    verifies; other keys' lines are ignored, and a failing one of this key rejects the note."""
    if any(ord(ch) < 0x20 and ch != "\n" for ch in note) or "\n\n" not in note:
        raise Rejected("malformed note")
    text, signatures = note.split("\n\n", 1)
    text += "\n"
    body = text.split("\n")[:-1]
    if len(body) < 3 or any(not line for line in body):
        raise Rejected("malformed checkpoint")
    origin, size, root_b64 = body[:3]
    if not size.isdigit() or (size != "0" and size.startswith("0")):
        raise Rejected("malformed checkpoint size")
    root = base64.b64decode(root_b64, validate=True)
    if len(root) != 32 or base64.b64encode(root).decode() != root_b64:
        raise Rejected("malformed root hash")
    if origin != vkey.name:
        raise Rejected("untrusted key: origin is not the key's name")
    if not signatures.endswith("\n"):
        raise Rejected("malformed signature block")
    lines = signatures[:-1].split("\n")
    if len(lines) > 16:
        raise Rejected("malformed: too many signatures")
    verified = False
    for line in lines:
        if not line.startswith("\u2014 "):
            raise Rejected("malformed signature line")
        name, blob = line[2:].rsplit(" ", 1)
        raw = base64.b64decode(blob, validate=True)
        if len(raw) < 5:
            raise Rejected("malformed signature")
        if name != vkey.name or raw[:4] != vkey.key_id:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(vkey.public).verify(raw[4:], text.encode())
        except InvalidSignature:
            raise Rejected("bad signature") from None
        verified = True
    if not verified:
        raise Rejected("untrusted key: no signature by the key")
    return Checkpoint(origin, int(size), root)


def verify_inclusion(line: bytes, proof: dict, note: str, vkey: VKey) -> Checkpoint:
    cp = verify_checkpoint(note, vkey)
    if cp.size != proof["tree_size"]:
        raise Rejected("inclusion: the proof is for another tree size")
    path = [b64(h) for h in proof["hashes"]]
    if root_from_inclusion(leaf_hash(line.removesuffix(b"\n")), proof["leaf_index"], cp.size, path) != cp.root:
        raise Rejected("inclusion: the root differs")
    return cp


def verify_consistency(old: str, new: str, proof: dict, vkey: VKey) -> None:
    a, b = verify_checkpoint(old, vkey), verify_checkpoint(new, vkey)
    if (proof["from"], proof["to"]) != (a.size, b.size):
        raise Rejected("consistency: the proof is between other sizes")
    verify_consistency_proof(a.size, b.size, a.root, b.root, [b64(h) for h in proof["hashes"]])


def b64(text: str) -> bytes:
    raw = base64.b64decode(text, validate=True)
    if len(raw) != 32:
        raise Rejected("malformed hash")
    return raw


def sign_note(origin: str, size: int, root: bytes, seed: bytes) -> str:
    """A checkpoint signed with the Ed25519 key of 32-byte `seed` (as the operator's key file)."""
    key = Ed25519PrivateKey.from_private_bytes(seed)
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    text = f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"
    blob = key_id(origin, public) + key.sign(text.encode())
    return f"{text}\n\u2014 {origin} {base64.b64encode(blob).decode()}\n"


def vkey_line(vkey: VKey) -> str:
    return f"{vkey.name}+{vkey.key_id.hex()}+{base64.b64encode(bytes([1]) + vkey.public).decode()}"


def rejects(f, *args) -> bool:
    try:
        f(*args)
    except Rejected:
        return True
    return False
