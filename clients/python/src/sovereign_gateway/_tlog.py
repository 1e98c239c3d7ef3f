"""Offline verification of the journal's transparency log, with no call to the gateway
(clients/SPEC.md, "Transparency log proofs (offline)"): signed checkpoints (C2SP tlog-checkpoint
on a C2SP signed note, Ed25519), inclusion proofs and consistency proofs (RFC 9162 §2.1).

The leaf of journal entry `seq` is its `jsonl` export line (without the trailing newline) at
leaf index `seq - 1`; leaf hash = SHA-256(0x00 || line), node hash = SHA-256(0x01 || left ||
right), the empty tree's root = SHA-256(""). Every failure raises `JournalVerificationError`
whose `reason` starts with `malformed`, `bad signature`, `untrusted key`, `inclusion` or
`consistency`."""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any, List, Mapping, Sequence, Tuple, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._errors import JournalVerificationError

__all__ = [
    "VerifiedCheckpoint",
    "verify_checkpoint",
    "verify_inclusion",
    "verify_consistency",
    "leaf_hash",
    "root_from_inclusion",
    "verify_consistency_proof",
]

_EM_DASH = "\u2014"
_MAX_SIGNATURES = 16  # C2SP signed-note: verifiers must accept at least 16
_ED25519 = 0x01  # signed-note signature type

Text = Union[str, bytes, bytearray]
Hash = Union[bytes, bytearray, str]  # raw 32 bytes, or base64 (standard, padded)


@dataclass(frozen=True)
class VerifiedCheckpoint:
    """A checkpoint whose signature verified: the log `origin`, its `tree_size` and the Merkle
    `root_hash` (32 bytes) of its first `tree_size` entries."""

    origin: str
    tree_size: int
    root_hash: bytes


def _fail(reason: str) -> JournalVerificationError:
    return JournalVerificationError(reason)


# -- RFC 9162 §2.1 --------------------------------------------------------------------------------


def leaf_hash(data: Text) -> bytes:
    """SHA-256(0x00 || data): the Merkle leaf hash of one entry (a str is hashed as UTF-8)."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return hashlib.sha256(b"\x00" + raw).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _hash(value: Any, what: str) -> bytes:
    if isinstance(value, str):
        try:
            value = base64.b64decode(value.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            raise _fail(f"malformed: {what} is not base64") from None
    if not isinstance(value, (bytes, bytearray)) or len(value) != 32:
        raise _fail(f"malformed: {what} is not a 32-byte hash")
    return bytes(value)


def _hashes(values: Any) -> List[bytes]:
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Sequence):
        raise _fail("malformed: the proof's hashes are not a list")
    return [_hash(h, f"proof hash {i}") for i, h in enumerate(values)]


def _size(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _fail(f"malformed: {what} is not an integer >= 0")
    return value


def root_from_inclusion(leaf_hash: Hash, index: int, size: int, hashes: Sequence[Hash]) -> bytes:
    """The root hash the inclusion proof `hashes` (RFC 9162 PATH(index, D[size])) leads to from
    the leaf hash at `index` in a tree of `size` leaves (RFC 9162 §2.1.3.2). Raises when the
    proof cannot be one of that tree (index not below size, too long, too short); compare the
    result with a verified root."""
    r = _hash(leaf_hash, "the leaf hash")
    index, size = _size(index, "leaf_index"), _size(size, "tree_size")
    proof = _hashes(hashes)
    if index >= size:
        raise _fail(f"inclusion: leaf index {index} is not below tree size {size}")
    fn, sn = index, size - 1
    for p in proof:
        if sn == 0:
            raise _fail(f"inclusion: the proof has more hashes than the path of leaf {index} in a tree of {size}")
        if fn & 1 or fn == sn:
            r = _node(p, r)
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            r = _node(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise _fail(f"inclusion: the proof has fewer hashes than the path of leaf {index} in a tree of {size}")
    return r


def verify_consistency_proof(m: int, n: int, root1: Hash, root2: Hash, hashes: Sequence[Hash]) -> None:
    """Verify that the tree of `n` leaves with root `root2` extends the tree of `m` leaves with
    root `root1`, by the consistency proof `hashes` (RFC 9162 PROOF(m, D[n]), verified per
    §2.1.4.2). Requires 1 <= m <= n; m == n takes an empty proof and equal roots."""
    first, second = _hash(root1, "root1"), _hash(root2, "root2")
    m, n = _size(m, "from"), _size(n, "to")
    proof = _hashes(hashes)
    if m == 0:
        raise _fail("consistency: from is 0 (a consistency proof starts at tree size 1)")
    if m > n:
        raise _fail(f"consistency: from {m} is above to {n} (the log would have shrunk)")
    if m == n:
        if proof:
            raise _fail(f"consistency: a non-empty proof between equal sizes ({m})")
        if first != second:
            raise _fail(f"consistency: two different root hashes for tree size {m} (a fork)")
        return
    if not proof:
        raise _fail(f"consistency: an empty proof from {m} to {n}")
    path = [first] + proof if m & (m - 1) == 0 else proof
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise _fail(f"consistency: the proof from {m} to {n} has too many hashes")
        if fn & 1 or fn == sn:
            fr, sr = _node(c, fr), _node(c, sr)
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            sr = _node(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise _fail(f"consistency: the proof from {m} to {n} has too few hashes")
    if fr != first:
        raise _fail(f"consistency: the proof does not lead to the root of tree size {m}")
    if sr != second:
        raise _fail(f"consistency: the proof does not lead to the root of tree size {n}")


# -- C2SP signed-note and tlog-checkpoint ----------------------------------------------------------


def _text(value: Any, what: str) -> str:
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(f"malformed: {what} is not UTF-8") from None
    if not isinstance(value, str):
        raise _fail(f"malformed: {what} is not text")
    return value


def _key_id(name: str, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([_ED25519]) + public_key).digest()[:4]


def _parse_vkey(vkey: Any) -> Tuple[str, bytes, bytes]:
    """`<name>+<8 hex key id>+<base64(0x01 || 32-byte key)>` (the base64 part may hold `+`)."""
    text = _text(vkey, "the vkey").strip()
    parts = text.split("+", 2)
    if len(parts) != 3 or not parts[0] or any(c.isspace() for c in parts[0]):
        raise _fail("malformed: the vkey is not <name>+<key id>+<key>")
    name, hex_id, key_b64 = parts
    if len(hex_id) != 8 or any(c not in "0123456789abcdef" for c in hex_id):
        raise _fail("malformed: the vkey's key id is not 8 lowercase hex digits")
    try:
        key = base64.b64decode(key_b64.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise _fail("malformed: the vkey's key is not base64") from None
    if len(key) != 33 or key[0] != _ED25519:
        raise _fail("malformed: the vkey is not an Ed25519 key")
    if _key_id(name, key[1:]) != bytes.fromhex(hex_id):
        raise _fail("malformed: the vkey's key id does not match its name and key")
    return name, bytes.fromhex(hex_id), key[1:]


def _open_note(note: Text, vkey: Text) -> str:
    """The text of a C2SP signed note once a signature of `vkey`'s key verifies over it.
    Signature lines of other keys (another name, or the same name with another key id) are
    ignored; a signature of the key that fails rejects the note."""
    name, kid, public_key = _parse_vkey(vkey)
    note = _text(note, "the checkpoint")
    if any(ord(c) < 0x20 and c != "\n" for c in note):
        raise _fail("malformed: a control character other than newline in the checkpoint")
    if not note.endswith("\n"):
        raise _fail("malformed: the checkpoint does not end with a newline")
    cut = note.rfind("\n\n")  # the text ends at the last blank line (signature lines are not empty)
    if cut < 0:
        raise _fail("malformed: no blank line between the checkpoint's text and its signatures")
    text, tail = note[:cut + 1], note[cut + 2:]
    signature_lines = tail[:-1].split("\n") if tail else []
    if not signature_lines:
        raise _fail("malformed: the checkpoint has no signature lines")
    if len(signature_lines) > _MAX_SIGNATURES:
        raise _fail(f"malformed: more than {_MAX_SIGNATURES} signature lines")
    signatures: List[Tuple[str, bytes]] = []
    for line in signature_lines:
        fields = line[2:].split(" ") if line.startswith(_EM_DASH + " ") else []
        if len(fields) != 2 or not fields[0]:
            raise _fail("malformed: a signature line is not '\u2014 <key name> <base64 signature>'")
        try:
            blob = base64.b64decode(fields[1].encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            raise _fail("malformed: a signature is not base64") from None
        if len(blob) < 5:
            raise _fail("malformed: a signature is shorter than a key id and a signature")
        signatures.append((fields[0], blob))
    verified = False
    message = text.encode("utf-8")
    for signer, blob in signatures:
        if signer != name or blob[:4] != kid:
            continue  # another key: ignored
        try:
            Ed25519PublicKey.from_public_bytes(public_key).verify(blob[4:], message)
        except InvalidSignature:
            raise _fail(f"bad signature: the signature of {name}+{kid.hex()} does not verify") from None
        verified = True
    if not verified:
        raise _fail(f"untrusted key: no signature of {name}+{kid.hex()}")
    return text


def verify_checkpoint(note: Text, vkey: Text) -> VerifiedCheckpoint:
    """Verify a checkpoint (`GET /v1/activity/checkpoint`'s text, str or bytes) against the log's
    verifier key (`GET /v1/activity/checkpoint/key`, better pinned from the operator): an
    Ed25519 signature of that key over the note's text, then the text (origin, tree size
    without leading zeros, 32-byte base64 root hash, optional non-empty extension lines) and
    its origin, which must be the key's name."""
    text = _open_note(note, vkey)
    lines = text[:-1].split("\n")
    if len(lines) < 3 or not all(lines):
        raise _fail("malformed: the checkpoint's text is not origin, tree size, root hash and non-empty extension lines")
    origin, size_line, root_line = lines[:3]
    if not (size_line.isascii() and size_line.isdigit()) or (size_line != "0" and size_line.startswith("0")):
        raise _fail(f"malformed: tree size {size_line!r} is not a decimal without leading zeros")
    root = _hash(root_line, "the root hash")
    name = _parse_vkey(vkey)[0]
    if origin != name:
        raise _fail(f"untrusted key: the checkpoint's origin {origin!r} is not the key's name {name!r}")
    return VerifiedCheckpoint(origin=origin, tree_size=int(size_line), root_hash=root)


# -- proofs against checkpoints ------------------------------------------------------------------


def _fields(obj: Any, names: Sequence[str], what: str) -> List[Any]:
    if not isinstance(obj, Mapping) and hasattr(obj, "model_dump"):
        obj = obj.model_dump(by_alias=True)
    if not isinstance(obj, Mapping):
        raise _fail(f"malformed: the {what} is not an object")
    missing = [n for n in names if n not in obj]
    if missing:
        raise _fail(f"malformed: the {what} has no {', '.join(missing)}")
    return [obj[n] for n in names]


def verify_inclusion(line: Text, proof: Any, note: Text, vkey: Text) -> VerifiedCheckpoint:
    """Verify that `line` (one `jsonl` export line, str or bytes; a trailing newline is
    stripped) is in the log: `proof` is `GET /v1/activity/proof`'s answer (`leaf_index`,
    `tree_size`, `hashes`; a dict or `InclusionProof`) and `note` a checkpoint of size
    `tree_size`, verified against `vkey` first. Returns the checkpoint."""
    checkpoint = verify_checkpoint(note, vkey)
    index, size, hashes = _fields(proof, ("leaf_index", "tree_size", "hashes"), "inclusion proof")
    index, size = _size(index, "leaf_index"), _size(size, "tree_size")
    if size != checkpoint.tree_size:
        raise _fail(f"inclusion: the proof is for tree size {size}, the checkpoint is of size {checkpoint.tree_size}")
    raw = line.encode("utf-8") if isinstance(line, str) else bytes(line)
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if root_from_inclusion(leaf_hash(raw), index, size, hashes) != checkpoint.root_hash:
        raise _fail(f"inclusion: the line at leaf index {index} does not lead to the root of tree size {size}")
    return checkpoint


def verify_consistency(old_note: Text, new_note: Text, proof: Any, vkey: Text) -> VerifiedCheckpoint:
    """Verify that the checkpoint `new_note` extends `old_note` (both verified against `vkey`):
    `proof` is `GET /v1/activity/consistency`'s answer (`from`, `to`, `hashes`; a dict or
    `ConsistencyProof`) between their sizes. Returns the new checkpoint."""
    old, new = verify_checkpoint(old_note, vkey), verify_checkpoint(new_note, vkey)
    m, n, hashes = _fields(proof, ("from", "to", "hashes"), "consistency proof")
    m, n = _size(m, "from"), _size(n, "to")
    if (m, n) != (old.tree_size, new.tree_size):
        raise _fail(f"consistency: the proof is from {m} to {n}, the checkpoints are of sizes "
                    f"{old.tree_size} and {new.tree_size}")
    verify_consistency_proof(m, n, old.root_hash, new.root_hash, hashes)
    return new
