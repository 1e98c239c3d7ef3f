"""Offline verification of a journal export against signed checkpoints, with no call to the
gateway (clients/SPEC.md, "Offline journal verification"; docs/JOURNAL.md)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["GENESIS_HASH", "JournalProblem", "JournalVerification", "jcs", "verify_journal_export"]

GENESIS_HASH = "sha256:" + "0" * 64

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _jcs_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _jcs_value(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _jcs_string(v)
    if isinstance(v, Mapping):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(f"{_jcs_string(k)}:{_jcs_value(v[k])}" for k in keys) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_jcs_value(x) for x in v) + "]"
    raise TypeError(f"JCS of {type(v).__name__} is not supported (journal values hold no floats)")


def jcs(value: Any) -> bytes:
    """RFC 8785 canonical JSON for the values journal entries and checkpoints hold (strings,
    integers, null, booleans, objects, arrays; no floats)."""
    return _jcs_value(value).encode("utf-8")


@dataclass(frozen=True)
class JournalProblem:
    line: Optional[int]
    seq: Optional[int]
    reason: str


@dataclass
class JournalVerification:
    ok: bool = True
    entries: int = 0
    first_seq: Optional[int] = None
    head_seq: Optional[int] = None
    head_hash: Optional[str] = None
    gaps: int = 0
    checkpoints_checked: int = 0
    problem: Optional[JournalProblem] = None

    def __bool__(self) -> bool:
        return self.ok


@dataclass
class _Chain:
    first_seq: int
    last_seq: int
    last_hash: str
    gaps: int = 0
    hashes: Dict[int, Tuple[str, int]] = field(default_factory=dict)  # seq -> (hash, line)


Line = Union[str, bytes, bytearray]


def _lines(export: Union[Line, Iterable[Line]]) -> List[Line]:
    if isinstance(export, (bytes, bytearray)):
        export = bytes(export).decode("utf-8")
    if isinstance(export, str):
        return list[Line](export.split("\n"))
    return list(export)


def _strip_newline(raw: Line) -> str:
    text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    return text[:-1] if text.endswith("\n") else text


def _normalize_key(key: Union[str, bytes]) -> str:
    if isinstance(key, bytes):
        key = key.decode("ascii")
    key = key.strip().lower()
    return key if key.startswith("ed25519:") else "ed25519:" + key


def _checkpoint_dicts(checkpoints: Any) -> List[Any]:
    if checkpoints is None:
        return []
    if isinstance(checkpoints, (str, bytes, bytearray)):
        return [line for line in _lines(checkpoints) if _strip_newline(line).strip()]
    if isinstance(checkpoints, Mapping) and "data" in checkpoints:
        return list(checkpoints["data"])
    data = getattr(checkpoints, "data", None)
    if isinstance(data, list):
        return data
    return list(checkpoints)


def _as_dict(cp: Any) -> Optional[Dict[str, Any]]:
    if isinstance(cp, (str, bytes, bytearray)):
        try:
            cp = json.loads(cp)
        except ValueError:
            return None
    elif hasattr(cp, "model_dump"):
        cp = cp.model_dump()
    return dict(cp) if isinstance(cp, Mapping) else None


def _signature_ok(cp: Mapping[str, Any]) -> bool:
    try:
        key = bytes.fromhex(str(cp["public_key"]).removeprefix("ed25519:"))
        signature = bytes.fromhex(str(cp["signature"]).removeprefix("ed25519:"))
        unsigned = {k: v for k, v in cp.items() if k != "signature"}
        Ed25519PublicKey.from_public_bytes(key).verify(signature, jcs(unsigned))
        return True
    except (KeyError, ValueError, TypeError, InvalidSignature):
        return False


def verify_journal_export(
    lines: Union[Line, Iterable[Line]],
    checkpoints: Any = None,
    public_key: Union[str, bytes, None] = None,
    *,
    sovereign_id: Optional[str] = None,
) -> JournalVerification:
    """Verify a `jsonl` export (its text, or its lines) offline: every `journal_hash`
    recomputed, every link between consecutive entries, and each signed checkpoint (a list of
    dicts / `SignedCheckpoint`s / lines, the text of `checkpoints-<id>.jsonl`, or a list
    answer) against the entry it names. `public_key` (`ed25519:<hex>`, the operator's `.pub`)
    pins the key the checkpoints must be signed with.

    Only the checkpoints of the export's chain are used. The gateway's lines do not name their
    chain (an export is one chain, each line exactly as it holds it; the id is the answer's
    `X-Sovereign-ID` and each checkpoint's `sovereign_id`): pass `sovereign_id` to use only
    that chain's checkpoints; without it every checkpoint given is used. Lines that do carry a
    `sovereign_id` field are grouped by it, and a checkpoint is matched to its own chain.

    Never raises on bad input: the result's `ok` is False and `problem` says where and why."""
    result = JournalVerification()
    chains: Dict[Optional[str], _Chain] = {}  # None: lines that do not name their chain

    def fail(line: Optional[int], seq: Optional[int], reason: str) -> JournalVerification:
        result.ok = False
        result.problem = JournalProblem(line=line, seq=seq, reason=reason)
        return result

    for number, raw in enumerate(_lines(lines), 1):
        text = _strip_newline(raw)
        if not text.strip():
            continue
        try:
            entry = json.loads(text)
        except ValueError:
            return fail(number, None, "malformed: not JSON")
        if not isinstance(entry, dict) or not isinstance(entry.get("journal_hash"), str):
            return fail(number, None, "malformed: not an object with a string journal_hash")
        seq, prev_hash = entry.get("seq"), entry.get("prev_hash")
        if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(prev_hash, str):
            return fail(number, None, "malformed: seq or prev_hash missing")
        claimed = entry.pop("journal_hash")
        try:
            canonical = jcs(entry)
        except TypeError as e:
            return fail(number, seq, f"malformed: {e}")
        if "sha256:" + hashlib.sha256(prev_hash.encode("utf-8") + canonical).hexdigest() != claimed:
            return fail(number, seq, "edited: journal_hash does not match the entry")
        own_id = entry.get("sovereign_id")
        chain_id = str(own_id) if own_id is not None else sovereign_id
        chain = chains.get(chain_id)
        if chain is None:
            if seq == 1 and prev_hash != GENESIS_HASH:
                return fail(number, seq, "broken link: the first entry's prev_hash is not the genesis hash")
            chain = chains[chain_id] = _Chain(first_seq=seq, last_seq=seq, last_hash=claimed)
        else:
            if seq <= chain.last_seq:
                return fail(number, seq, f"reordered: seq {seq} after seq {chain.last_seq}")
            if seq == chain.last_seq + 1:
                if prev_hash != chain.last_hash:
                    return fail(number, seq, "broken link: prev_hash is not the previous entry's journal_hash")
            else:
                chain.gaps += 1
                result.gaps += 1
            chain.last_seq, chain.last_hash = seq, claimed
        chain.hashes[seq] = (claimed, number)
        result.entries += 1
        if result.first_seq is None:
            result.first_seq = seq
        result.head_seq, result.head_hash = seq, claimed

    pinned = _normalize_key(public_key) if public_key is not None else None
    for index, item in enumerate(_checkpoint_dicts(checkpoints), 1):
        cp = _as_dict(item)
        if cp is None or not isinstance(cp.get("seq"), int):
            return fail(None, None, f"malformed: checkpoint {index} is not a checkpoint object")
        cp_id = cp.get("sovereign_id")
        chain = chains.get(str(cp_id)) if cp_id is not None else None
        if chain is None and sovereign_id is None:
            chain = chains.get(None)  # an export that does not name its chain: one chain
        if chain is None:
            continue  # another chain's checkpoint
        seq = cp["seq"]
        if not _signature_ok(cp):
            return fail(None, seq, f"bad signature: checkpoint {index} (seq {seq}) does not verify")
        if pinned is not None and _normalize_key(str(cp.get("public_key", ""))) != pinned:
            return fail(None, seq, f"untrusted key: checkpoint {index} (seq {seq}) is signed by {cp.get('public_key')}")
        if seq in chain.hashes:
            entry_hash, number = chain.hashes[seq]
            if entry_hash != cp.get("head_hash"):
                return fail(number, seq, f"rewritten: the entry differs from checkpoint {index}'s head_hash")
            result.checkpoints_checked += 1
        elif seq > chain.last_seq and chain.gaps == 0 and chain.first_seq == 1:
            return fail(None, seq, f"truncated: checkpoint {index} vouches for seq {seq}, the export ends at {chain.last_seq}")
    return result
