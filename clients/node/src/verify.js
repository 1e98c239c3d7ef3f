// Local helpers that never call the gateway: offline verification of a journal export
// (clients/SPEC.md, docs/JOURNAL.md) and of a webhook's Standard Webhooks signature
// (docs/WEBHOOKS.md).
import { createHash, createHmac, createPublicKey, timingSafeEqual, verify as cryptoVerify } from 'node:crypto';

import { WebhookVerificationError } from './errors.js';

export const GENESIS_HASH = 'sha256:' + '0'.repeat(64);

/**
 * RFC 8785 (JCS) for JSON values: object keys sorted by UTF-16 code units, no whitespace.
 * ECMAScript's JSON.stringify already writes strings and numbers the way RFC 8785 asks.
 */
export function canonicalJson(value) {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('JCS: non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(value[k])).join(',') + '}';
}

function sha256Hex(...parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(p, 'utf8');
  return h.digest('hex');
}

// The 12-byte DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410), before the 32 raw bytes.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** `ed25519:<64 hex>` (or the bare hex, or 32 raw bytes) as 32 bytes; null if not one. */
function rawEd25519(key) {
  if (key == null) return null;
  if (typeof key !== 'string') {
    const b = Buffer.from(key);
    return b.length === 32 ? b : null;
  }
  const hex = key.trim().replace(/^ed25519:/, '');
  return /^[0-9a-fA-F]{64}$/.test(hex) ? Buffer.from(hex, 'hex') : null;
}

function ed25519KeyObject(raw) {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

function toLines(input) {
  if (input == null) return [];
  if (Array.isArray(input)) return input.map((l) => (typeof l === 'string' ? l : Buffer.from(l).toString('utf8')));
  const text = typeof input === 'string' ? input : Buffer.from(input).toString('utf8');
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function toCheckpoints(input) {
  if (input == null) return [];
  const items = Array.isArray(input) ? input : toLines(input);
  return items
    .map((c) => (typeof c === 'string' ? c.trim() : c))
    .filter((c) => c !== '')
    .map((c) => {
      if (typeof c !== 'string') return c;
      try {
        return JSON.parse(c);
      } catch {
        return { __malformed: c };
      }
    });
}

/**
 * Verifies a journal export (the `jsonl` export of `POST /v1/activity/logs`, each line as the
 * chain holds it) offline: every line's hash and link, then the signed checkpoints.
 *
 * @param lines the export: a string, a Buffer, or an array of lines
 * @param options.checkpoints signed checkpoints: objects, JSON lines, or a `checkpoints-<id>.jsonl` text
 * @param options.publicKey the operator's pinned key, `ed25519:<64 hex>` (content of `<signing_key>.pub`)
 * @param options.sovereignId the chain to match checkpoints against (else inferred)
 */
export function verifyJournalExport(lines, options = {}) {
  const { checkpoints, publicKey, sovereignId } = options;
  const result = {
    ok: true,
    entries: 0,
    firstSeq: null,
    headSeq: null,
    headHash: null,
    gaps: 0,
    checkpointsChecked: 0,
    problem: null,
  };
  const fail = (line, seq, reason) => {
    result.ok = false;
    result.problem = { line, seq, reason };
    return result;
  };

  const bySeq = new Map(); // seq -> { line, hash }
  let prev = null; // { seq, hash }
  const all = toLines(lines);
  for (let i = 0; i < all.length; i++) {
    const lineNo = i + 1;
    let entry;
    try {
      entry = JSON.parse(all[i]);
    } catch {
      return fail(lineNo, null, 'malformed: the line is not JSON');
    }
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry) || typeof entry.journal_hash !== 'string') {
      return fail(lineNo, null, 'malformed: not a JSON object with a string journal_hash');
    }
    const seq = entry.seq;
    if (!Number.isSafeInteger(seq) || seq < 1 || typeof entry.prev_hash !== 'string') {
      return fail(lineNo, Number.isSafeInteger(seq) ? seq : null, 'malformed: seq must be a positive integer and prev_hash a string');
    }
    const { journal_hash: claimed, ...rest } = entry;
    let computed;
    try {
      computed = 'sha256:' + sha256Hex(entry.prev_hash, canonicalJson(rest));
    } catch (e) {
      return fail(lineNo, seq, `malformed: ${e.message}`);
    }
    if (computed !== claimed) {
      return fail(lineNo, seq, 'edited: journal_hash does not match the entry');
    }
    if (prev) {
      if (seq <= prev.seq) {
        return fail(lineNo, seq, `reordered: seq ${seq} after seq ${prev.seq}`);
      }
      if (seq === prev.seq + 1) {
        if (entry.prev_hash !== prev.hash) {
          return fail(lineNo, seq, "broken link: prev_hash is not the previous entry's journal_hash");
        }
      } else {
        result.gaps += 1;
      }
    } else if (seq === 1 && entry.prev_hash !== GENESIS_HASH) {
      return fail(lineNo, seq, 'broken link: the first entry does not start from the genesis hash');
    }
    if (result.firstSeq === null) result.firstSeq = seq;
    bySeq.set(seq, { line: lineNo, hash: claimed });
    prev = { seq, hash: claimed };
    result.entries += 1;
    result.headSeq = seq;
    result.headHash = claimed;
  }

  // Checkpoints.
  const cps = toCheckpoints(checkpoints);
  if (!cps.length) return result;
  let pinned = null;
  if (publicKey != null) {
    pinned = rawEd25519(publicKey);
    if (!pinned) throw new TypeError('publicKey must be `ed25519:<64 hex>` or 32 raw bytes');
  }
  // Which chain the entries are: the option, else the only sovereign id the checkpoints name,
  // else every id one of whose checkpoints names an exported (seq, hash).
  let chains;
  if (sovereignId != null) chains = new Set([sovereignId]);
  else {
    const ids = new Set(cps.filter((c) => c && typeof c.sovereign_id === 'string').map((c) => c.sovereign_id));
    if (ids.size <= 1) chains = ids;
    else {
      chains = new Set(
        cps
          .filter((c) => c && ids.has(c.sovereign_id) && bySeq.get(c.seq)?.hash === c.head_hash)
          .map((c) => c.sovereign_id),
      );
    }
  }
  const complete = result.entries > 0 && result.firstSeq === 1 && result.gaps === 0;
  for (let k = 0; k < cps.length; k++) {
    const cp = cps[k];
    const name = `checkpoint ${k + 1}`;
    if (
      !cp || typeof cp !== 'object' || cp.__malformed !== undefined ||
      typeof cp.signature !== 'string' || typeof cp.public_key !== 'string' ||
      typeof cp.head_hash !== 'string' || !Number.isSafeInteger(cp.seq) || typeof cp.sovereign_id !== 'string'
    ) {
      return fail(null, cp && Number.isSafeInteger(cp.seq) ? cp.seq : null, `malformed: ${name} is not a signed checkpoint`);
    }
    if (!chains.has(cp.sovereign_id)) continue;
    const at = bySeq.get(cp.seq);
    const line = at ? at.line : null;
    const { signature, ...unsigned } = cp;
    const key = rawEd25519(cp.public_key);
    const sig = /^ed25519:[0-9a-fA-F]{128}$/.test(signature) ? Buffer.from(signature.slice(8), 'hex') : null;
    let valid = false;
    if (key && sig) {
      try {
        valid = cryptoVerify(null, Buffer.from(canonicalJson(unsigned), 'utf8'), ed25519KeyObject(key), sig);
      } catch {
        valid = false;
      }
    }
    if (!valid) return fail(line, cp.seq, `bad signature: ${name} (seq ${cp.seq}) does not verify with its public_key`);
    if (pinned && !pinned.equals(key)) {
      return fail(line, cp.seq, `untrusted key: ${name} (seq ${cp.seq}) is signed by ${cp.public_key}, not the pinned key`);
    }
    if (at) {
      if (at.hash !== cp.head_hash) {
        return fail(line, cp.seq, `rewritten: entry seq ${cp.seq} differs from the signed ${name} (head_hash ${cp.head_hash})`);
      }
      result.checkpointsChecked += 1;
    } else if (complete && cp.seq > result.headSeq) {
      return fail(null, cp.seq, `truncated: the export ends at seq ${result.headSeq}, but the signed ${name} vouches for seq ${cp.seq}`);
    }
  }
  return result;
}

function header(headers, name) {
  if (!headers) return null;
  if (typeof headers.get === 'function') {
    const v = headers.get(name);
    if (v != null) return Array.isArray(v) ? v.join(' ') : String(v);
    if (!(headers instanceof Map)) return null;
  }
  const entries = headers instanceof Map ? headers.entries() : Object.entries(headers);
  for (const [k, v] of entries) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(' ') : v == null ? null : String(v);
  }
  return null;
}

/**
 * Verifies a Standard Webhooks signature: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature` (`v1,<base64>` entries, space-separated, any one may match) over
 * `"{id}.{timestamp}.{body}"` with HMAC-SHA256 keyed by the base64 after `whsec_`.
 *
 * @param secret `whsec_…`
 * @param headers a Headers, a Map, or a plain object (any case)
 * @param body the raw body, exactly as received (string, Buffer or Uint8Array)
 * @param options.toleranceSeconds the allowed clock difference (default 300)
 * @param options.now the time to check against: a Date or Unix seconds (default: now)
 * @returns the parsed JSON payload (the body text if it is not JSON)
 * @throws WebhookVerificationError
 */
export function verifyWebhook(secret, headers, body, options = {}) {
  const { toleranceSeconds = 300, now } = options;
  if (typeof secret !== 'string' || secret === '') throw new WebhookVerificationError('no webhook secret');
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  if (key.length === 0) throw new WebhookVerificationError('the webhook secret is not base64');
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  }
  if (!/^\d+$/.test(timestamp.trim())) throw new WebhookVerificationError('webhook-timestamp is not Unix seconds');
  const nowSeconds =
    now instanceof Date ? now.getTime() / 1000 : typeof now === 'number' ? now : Date.now() / 1000;
  const ts = Number(timestamp.trim());
  if (Math.abs(nowSeconds - ts) > toleranceSeconds) {
    throw new WebhookVerificationError(`webhook-timestamp ${ts} is outside the tolerance of ${toleranceSeconds} s`);
  }
  const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body ?? '');
  const expected = createHmac('sha256', key)
    .update(Buffer.concat([Buffer.from(`${id}.${timestamp.trim()}.`, 'utf8'), raw]))
    .digest();
  let matched = false;
  for (const part of signatures.split(' ')) {
    const comma = part.indexOf(',');
    if (comma < 0 || part.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(part.slice(comma + 1), 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('no webhook signature matches');
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
