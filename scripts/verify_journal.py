#!/usr/bin/env python3
"""Verify a Sovereign Gateway journal directory as `sovereign journal verify` does (docs/JOURNAL.md).

Usage: verify_journal.py DIR [CHECKPOINT_FILE]    exit 0 when everything verifies, 1 otherwise.
Checks every chain's seq, prev_hash links and journal_hash, then the chain against the signed
checkpoints (count and head hash; the standard library has no Ed25519, so signatures are left
to `sovereign journal verify --public-key`). A chain pruned by retention starts after its anchor
(anchor-<id>.jsonl: the last pruned entry's seq and hash); segments the anchor covers are skipped.
Standard library only.
"""
import hashlib, json, os, re, sys

GENESIS = "sha256:" + "0" * 64


def jcs(value):  # RFC 8785 for entry values: strings, integers (< 2^53), null, charges (a list of objects)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def lines(path):  # the '\n'-terminated lines, and the unterminated bytes after the last one
    # Data ends at the first NUL: the active segment's zeroed room (no line holds a NUL).
    *body, rest = open(path, "rb").read().split(b"\0", 1)[0].split(b"\n")
    return body, rest


def verify_chain(sid, files, cps, anchor=None):
    seq, head = (anchor["seq"], anchor["head_hash"]) if anchor else (0, GENESIS)
    files = [f for f in files if int(f[-26:-6]) > seq]  # names end in <first seq, 20 digits>.jsonl
    for cp_file, cp_line, cp in cps.get(seq, []) if anchor else []:
        if cp["head_hash"] != head:
            return f"FAIL {sid}: anchor-{sid}.jsonl:1: differs from the checkpoint at {cp_file}:{cp_line}"
    for k, path in enumerate(files):
        body, rest = lines(path)
        for i, raw in enumerate(body, 1):
            where = f"FAIL {sid}: {os.path.basename(path)}:{i}:"
            try:
                entry = json.loads(raw)
                claimed = entry.pop("journal_hash")
            except (ValueError, KeyError, AttributeError, TypeError):
                return f"{where} malformed entry"
            if entry.get("seq") != seq + 1:
                return f"{where} expected seq {seq + 1}, found {entry.get('seq')}"
            if entry.get("prev_hash") != head:
                return f"{where} prev_hash does not link to the previous entry"
            if "sha256:" + hashlib.sha256(head.encode() + jcs(entry)).hexdigest() != claimed:
                return f"{where} journal_hash does not match the entry (edited)"
            seq, head = seq + 1, claimed
            for cp_file, cp_line, cp in cps.get(seq, []):
                if cp["head_hash"] != head or cp["count"] != seq:
                    return f"{where} differs from the checkpoint at {cp_file}:{cp_line}"
        if rest and k < len(files) - 1:  # only the last segment may end in a torn record
            return f"FAIL {sid}: {os.path.basename(path)}:{len(body) + 1}: incomplete final line"
    for s in sorted(s for s in cps if s > seq):
        cp_file, cp_line, _ = cps[s][0]
        return f"FAIL {sid}: {os.path.basename(cp_file)}:{cp_line}: journal ends at seq {seq} (tail truncated)"
    return f"OK {sid}: {seq} entries, head {head}"


def verify(directory, checkpoint_file=None):
    names = sorted(os.listdir(directory))
    segments, cps = {}, {}
    for name in names:
        if m := re.fullmatch(r"journal-(.+)-(\d{20})\.jsonl", name):
            segments.setdefault(m[1], []).append(os.path.join(directory, name))
    cp_files = [checkpoint_file] if checkpoint_file else [
        os.path.join(directory, n) for n in names if re.fullmatch(r"checkpoints-.+\.jsonl", n)]
    for path in cp_files:
        for i, raw in enumerate(lines(path)[0], 1):
            try:
                cp = json.loads(raw)
                cps.setdefault(cp["sovereign_id"], {}).setdefault(cp["seq"], []).append((path, i, cp))
            except (ValueError, KeyError, TypeError):
                return [f"FAIL checkpoints: {os.path.basename(path)}:{i}: malformed checkpoint"]
    anchors = {}
    for name in names:
        if m := re.fullmatch(r"anchor-(.+)\.jsonl", name):
            body = lines(os.path.join(directory, name))[0]
            try:
                anchors[m[1]] = json.loads(body[0]) if len(body) == 1 else None
            except ValueError:
                anchors[m[1]] = None
    ids = sorted(set(segments) | set(cps) | set(anchors))
    return [verify_chain(s, segments.get(s, []), cps.get(s, {}), anchors.get(s)) if anchors.get(s, 1)
            else f"FAIL {s}: anchor-{s}.jsonl:1: malformed anchor"
            for s in ids] or ["FAIL no journal found"]


if __name__ == "__main__":
    report = verify(*sys.argv[1:3])
    print("\n".join(report))
    sys.exit(0 if all(r.startswith("OK") for r in report) else 1)
