// Offline verification of a journal export in the browser (clients/SPEC.md, "Offline journal
// verification"): every journal_hash recomputed with WebCrypto SHA-256 over prev_hash ++ JCS
// (RFC 8785) of the entry, every link checked, and each signed checkpoint's Ed25519 signature
// (WebCrypto Ed25519, where the browser has it) matched against the entry it names.

export const GENESIS_HASH = `sha256:${'0'.repeat(64)}`;

/** RFC 8785 for the values journal entries and checkpoints hold (strings, integers, null; an
 * entry's charges: an array of objects, whose keys sort too). JSON.stringify's string escapes
 * are JCS's (short forms, other controls as lowercase \u00xx, non-ASCII raw). */
export function jcs(v) {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new Error(`not an integer: ${v}`);
    return String(v);
  }
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  if (typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`;
  }
  throw new Error(`JCS of ${typeof v} is not supported`);
}

const utf8 = new TextEncoder();
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (s) => Uint8Array.from(s.match(/../g) || [], (b) => parseInt(b, 16));

async function sha256(...parts) {
  const bytes = parts.map((p) => utf8.encode(p));
  const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of bytes) { all.set(b, at); at += b.length; }
  return `sha256:${hex(await crypto.subtle.digest('SHA-256', all))}`;
}

/** Whether this browser verifies Ed25519 in WebCrypto. */
export async function ed25519Supported() {
  try {
    await crypto.subtle.importKey('raw', new Uint8Array(32), { name: 'Ed25519' }, false, ['verify']);
    return true;
  } catch {
    return false;
  }
}

async function signatureOk(cp) {
  const key = await crypto.subtle.importKey('raw', unhex(String(cp.public_key).replace(/^ed25519:/, '')), { name: 'Ed25519' }, false, ['verify']);
  const { signature, ...unsigned } = cp;
  return crypto.subtle.verify({ name: 'Ed25519' }, key, unhex(String(signature).replace(/^ed25519:/, '')), utf8.encode(jcs(unsigned)));
}

/**
 * Verify one chain's `jsonl` export text against its checkpoints (objects; only those whose
 * sovereign_id is `sovereignId` are used). Never throws on bad input: `ok` false and `problem`.
 */
export async function verifyExport(text, checkpoints = [], sovereignId = null) {
  const result = { ok: true, entries: 0, first_seq: null, head_seq: null, head_hash: null, gaps: 0, checkpoints_checked: 0, signatures: 'checked', problem: null };
  const fail = (line, seq, reason) => Object.assign(result, { ok: false, problem: { line, seq, reason } });
  const hashes = new Map();
  let last = null;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const number = i + 1;
    if (!lines[i].trim()) continue;
    let entry;
    try { entry = JSON.parse(lines[i]); } catch { return fail(number, null, 'malformed: not JSON'); }
    if (!entry || typeof entry !== 'object' || typeof entry.journal_hash !== 'string') return fail(number, null, 'malformed: not an object with a string journal_hash');
    const { seq, prev_hash: prev } = entry;
    if (!Number.isSafeInteger(seq) || typeof prev !== 'string') return fail(number, null, 'malformed: seq or prev_hash missing');
    const { journal_hash: claimed, ...rest } = entry;
    let canonical;
    try { canonical = jcs(rest); } catch (e) { return fail(number, seq, `malformed: ${e.message}`); }
    if (await sha256(prev, canonical) !== claimed) return fail(number, seq, 'edited: journal_hash does not match the entry');
    if (last === null) {
      if (seq === 1 && prev !== GENESIS_HASH) return fail(number, seq, "broken link: the first entry's prev_hash is not the genesis hash");
      result.first_seq = seq;
    } else if (seq <= last.seq) {
      return fail(number, seq, `reordered: seq ${seq} after seq ${last.seq}`);
    } else if (seq === last.seq + 1) {
      if (prev !== last.hash) return fail(number, seq, "broken link: prev_hash is not the previous entry's journal_hash");
    } else {
      result.gaps += 1;
    }
    last = { seq, hash: claimed };
    hashes.set(seq, { hash: claimed, line: number });
    result.entries += 1;
    result.head_seq = seq;
    result.head_hash = claimed;
  }
  const canVerify = await ed25519Supported();
  if (!canVerify) result.signatures = 'not checked: this browser has no Ed25519 in WebCrypto';
  let index = 0;
  for (const cp of checkpoints) {
    index += 1;
    if (sovereignId && cp.sovereign_id !== sovereignId) continue;
    if (!cp || !Number.isSafeInteger(cp.seq)) return fail(null, null, `malformed: checkpoint ${index} is not a checkpoint object`);
    if (canVerify && !(await signatureOk(cp).catch(() => false))) return fail(null, cp.seq, `bad signature: checkpoint ${index} (seq ${cp.seq}) does not verify`);
    const at = hashes.get(cp.seq);
    if (at) {
      if (at.hash !== cp.head_hash) return fail(at.line, cp.seq, `rewritten: the entry differs from checkpoint ${index}'s head_hash`);
      result.checkpoints_checked += 1;
    } else if (last && cp.seq > last.seq && result.gaps === 0 && result.first_seq === 1) {
      return fail(null, cp.seq, `truncated: checkpoint ${index} vouches for seq ${cp.seq}, the export ends at ${last.seq}`);
    }
  }
  return result;
}
