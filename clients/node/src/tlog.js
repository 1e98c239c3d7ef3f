// Offline verification of the activity journal as an RFC 9162 transparency log (issue 48):
// C2SP tlog-checkpoint notes signed with Ed25519 (C2SP signed-note), inclusion proofs of
// export lines and consistency proofs between checkpoints. Nothing here calls the gateway.
//
// Every failure throws a JournalVerificationError whose `reason` (also its message) starts with
// `malformed`, `bad signature`, `untrusted key`, `inclusion` or `consistency`.
import { createHash, createPublicKey, verify as cryptoVerify } from 'node:crypto';

/** A checkpoint, inclusion proof or consistency proof that does not verify. */
export class JournalVerificationError extends Error {
  constructor(reason) {
    super(reason);
    this.name = 'JournalVerificationError';
    /** Starts with malformed, bad signature, untrusted key, inclusion or consistency. */
    this.reason = reason;
  }
}

/** The most signature lines a note may carry. */
export const MAX_NOTE_SIGNATURES = 16;

const HASH_SIZE = 32;
const SIG_PREFIX = '\u2014 '; // EM DASH, space
const ED25519_ALG = 0x01;
// The 12-byte DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410), before the 32 raw bytes.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function fail(reason) {
  throw new JournalVerificationError(reason);
}

function sha256(...parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Standard base64 with padding, strictly (Buffer.from is lenient); null when it is not. */
function strictBase64(s) {
  if (typeof s !== 'string' || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  const b = Buffer.from(s, 'base64');
  return b.toString('base64') === s ? b : null;
}

function asBytes(value, what) {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return Buffer.from(value);
  return fail(`malformed: ${what} must be a string or bytes`);
}

function asText(value, what) {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) {
    try {
      return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(value);
    } catch {
      return fail(`malformed: ${what} is not UTF-8`);
    }
  }
  return fail(`malformed: ${what} must be a string or bytes`);
}

/** A 32-byte hash given as bytes or as base64. */
function asHash(value, what, prefix = 'malformed') {
  let b = null;
  if (typeof value === 'string') b = strictBase64(value);
  else if (value instanceof Uint8Array) b = Buffer.from(value);
  if (!b) fail(`${prefix}: ${what} is not base64 or bytes`);
  if (b.length !== HASH_SIZE) fail(`${prefix}: ${what} is ${b.length} bytes, not ${HASH_SIZE}`);
  return b;
}

function asHashes(hashes, prefix) {
  if (!Array.isArray(hashes)) fail(`${prefix}: hashes must be an array`);
  return hashes.map((h, i) => asHash(h, `hash ${i}`, prefix));
}

function asSize(value, what, prefix) {
  if (typeof value === 'bigint' && value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  if (!Number.isSafeInteger(value) || value < 0) fail(`${prefix}: ${what} must be a non-negative integer`);
  return value;
}

// ------------------------------------------------------------------- RFC 9162 hashing

/** RFC 9162 leaf hash: SHA-256(0x00 || leaf). `leaf` is bytes or a string (UTF-8). */
export function leafHash(leaf) {
  return sha256(Buffer.from([0x00]), asBytes(leaf, 'the leaf'));
}

function nodeHash(left, right) {
  return sha256(Buffer.from([0x01]), left, right);
}

/**
 * The root an inclusion proof leads to (RFC 9162 §2.1.3.2) from the leaf hash at `index` in a
 * tree of `size` leaves. Hashes are bytes or base64. Throws when the path cannot be one of
 * that leaf in that tree (reason `inclusion…`, `malformed…` for a hash that is not 32 bytes).
 */
export function rootFromInclusion(leafHashValue, index, size, hashes) {
  const leaf = asHash(leafHashValue, 'the leaf hash');
  index = asSize(index, 'the leaf index', 'inclusion');
  size = asSize(size, 'the tree size', 'inclusion');
  const path = asHashes(hashes, 'malformed');
  if (index >= size) fail(`inclusion: leaf index ${index} is not below the tree size ${size}`);
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) fail(`inclusion: the proof has ${path.length} hashes, too many for leaf ${index} of ${size}`);
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) fail(`inclusion: the proof has ${path.length} hashes, too few for leaf ${index} of ${size}`);
  return r;
}

/**
 * Verifies an RFC 9162 consistency proof (§2.1.4.2) between the tree of `m` leaves with root
 * `root1` and the tree of `n` leaves with root `root2` (1 <= m <= n; m == n needs an empty
 * proof and equal roots). Roots and hashes are bytes or base64. Returns true or throws
 * (reason `consistency…`, `malformed…` for a hash that is not 32 bytes).
 */
export function verifyConsistencyProof(m, n, root1, root2, hashes) {
  m = asSize(m, 'the first tree size', 'consistency');
  n = asSize(n, 'the second tree size', 'consistency');
  const r1 = asHash(root1, 'the first root hash');
  const r2 = asHash(root2, 'the second root hash');
  const path = asHashes(hashes, 'malformed');
  if (m === 0) fail('consistency: the first tree size must be at least 1');
  if (m > n) fail(`consistency: the first tree size ${m} is above the second ${n}`);
  if (m === n) {
    if (path.length !== 0) fail(`consistency: a proof between equal sizes must be empty, not ${path.length} hashes`);
    if (!r1.equals(r2)) fail(`consistency: two different roots for tree size ${m}`);
    return true;
  }
  if (path.length === 0) fail(`consistency: an empty proof from size ${m} to ${n}`);
  // When m is a power of two the old root is the first node of the path.
  const nodes = isPowerOfTwo(m) ? [r1, ...path] : path;
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = nodes[0];
  let sr = nodes[0];
  for (const c of nodes.slice(1)) {
    if (sn === 0) fail(`consistency: the proof has ${path.length} hashes, too many for ${m} to ${n}`);
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) fail(`consistency: the proof has ${path.length} hashes, too few for ${m} to ${n}`);
  if (!fr.equals(r1)) fail(`consistency: the proof does not lead to the root of tree size ${m}`);
  if (!sr.equals(r2)) fail(`consistency: the proof does not lead to the root of tree size ${n}`);
  return true;
}

function isPowerOfTwo(x) {
  while (x > 1) {
    if (x % 2 === 1) return false;
    x = Math.floor(x / 2);
  }
  return x === 1;
}

// ------------------------------------------------------------------- signed notes

/** `<name>+<8 hex key id>+<base64(0x01 || 32-byte key)>` parsed and checked. */
function parseVerifierKey(vkey) {
  const text = asText(vkey, 'the verifier key').replace(/\n$/, '');
  const bad = (why) => fail(`malformed: the verifier key ${why}`);
  const a = text.indexOf('+');
  if (a < 0) bad('is not <name>+<key id>+<key>');
  const name = text.slice(0, a);
  const b = text.indexOf('+', a + 1);
  if (b < 0) bad('is not <name>+<key id>+<key>');
  const idHex = text.slice(a + 1, b);
  const keyB64 = text.slice(b + 1);
  if (!validKeyName(name)) bad('has an empty name or one with spaces or "+"');
  if (!/^[0-9a-f]{8}$/.test(idHex)) bad('key id is not 8 lowercase hex digits');
  const key = strictBase64(keyB64);
  if (!key || key.length !== 33 || key[0] !== ED25519_ALG) bad('is not an Ed25519 key (base64 of 0x01 and 32 bytes)');
  const id = keyId(name, key);
  if (id.toString('hex') !== idHex) bad(`key id ${idHex} is not the key's (${id.toString('hex')})`);
  let keyObject;
  try {
    keyObject = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, key.subarray(1)]), format: 'der', type: 'spki' });
  } catch {
    bad('is not an Ed25519 public key');
  }
  return { name, id, keyObject, text };
}

/** The signed-note key id: the first 4 bytes of SHA-256(name || "\n" || 0x01 || key). */
function keyId(name, algAndKey) {
  return sha256(Buffer.from(name, 'utf8'), Buffer.from([0x0a]), algAndKey).subarray(0, 4);
}

function validKeyName(name) {
  return name !== '' && !/[\s+]/u.test(name) && !/[\u0000-\u001f\u007f-\u009f]/.test(name);
}

/**
 * Verifies a checkpoint (a C2SP tlog-checkpoint in a signed note) against a verifier key: the
 * origin must be the key's name, and a signature line of that key (name and key id) must
 * verify; signature lines of other keys are ignored.
 *
 * @param note the note text (string or bytes)
 * @param vkey `<name>+<key id>+<base64 key>` (GET /v1/activity/checkpoint/key; a trailing newline is fine)
 * @returns {{origin: string, treeSize: number, rootHash: Buffer, extensions: string[]}}
 * @throws JournalVerificationError
 */
export function verifyCheckpoint(note, vkey) {
  const key = parseVerifierKey(vkey);
  const text = asText(note, 'the checkpoint');
  if (/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(text)) fail('malformed: the note holds a control character other than newline');
  if (typeof text.isWellFormed === 'function' && !text.isWellFormed()) fail('malformed: the note is not well-formed Unicode');
  const split = text.lastIndexOf('\n\n');
  if (split < 0) fail('malformed: the note has no blank line before its signatures');
  const body = text.slice(0, split + 1);
  const sigBlock = text.slice(split + 2);

  // The checkpoint body: origin, size, root hash, then optional non-empty extension lines.
  const lines = body.slice(0, -1).split('\n');
  if (lines.length < 3) fail('malformed: the checkpoint needs an origin, a tree size and a root hash');
  const [origin, sizeText, rootText, ...extensions] = lines;
  if (origin === '') fail('malformed: the origin line is empty');
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText)) fail(`malformed: the tree size ${JSON.stringify(sizeText)} is not a decimal without leading zeros`);
  const treeSize = Number(sizeText);
  if (!Number.isSafeInteger(treeSize)) fail(`malformed: the tree size ${sizeText} is too large`);
  const rootHash = strictBase64(rootText);
  if (!rootHash || rootHash.length !== HASH_SIZE) fail('malformed: the root hash is not base64 of 32 bytes');
  if (extensions.some((e) => e === '')) fail('malformed: an empty extension line');

  // The signature lines.
  if (sigBlock === '' || !sigBlock.endsWith('\n')) fail('malformed: the note has no signature lines ending with a newline');
  const sigLines = sigBlock.slice(0, -1).split('\n');
  if (sigLines.length > MAX_NOTE_SIGNATURES) fail(`malformed: ${sigLines.length} signature lines, more than ${MAX_NOTE_SIGNATURES}`);
  const sigs = sigLines.map((line, i) => {
    if (!line.startsWith(SIG_PREFIX)) fail(`malformed: signature line ${i + 1} does not start with "— "`);
    const rest = line.slice(SIG_PREFIX.length);
    const sp = rest.indexOf(' ');
    const name = sp < 0 ? '' : rest.slice(0, sp);
    const raw = sp < 0 ? null : strictBase64(rest.slice(sp + 1));
    if (!validKeyName(name) || !raw || raw.length < 5) fail(`malformed: signature line ${i + 1} is not "— <name> <base64>"`);
    return { name, id: raw.subarray(0, 4), sig: raw.subarray(4) };
  });

  if (origin !== key.name) fail(`untrusted key: the checkpoint's origin ${JSON.stringify(origin)} is not the key's name ${JSON.stringify(key.name)}`);
  const message = Buffer.from(body, 'utf8');
  let verified = false;
  for (const s of sigs) {
    if (s.name !== key.name || !s.id.equals(key.id)) continue;
    let ok = false;
    try {
      ok = s.sig.length === 64 && cryptoVerify(null, message, key.keyObject, s.sig);
    } catch {
      ok = false;
    }
    if (!ok) fail(`bad signature: the signature of ${key.name}+${key.id.toString('hex')} does not verify`);
    verified = true;
  }
  if (!verified) fail(`untrusted key: no signature of ${key.name}+${key.id.toString('hex')} on the checkpoint`);
  return { origin, treeSize, rootHash, extensions };
}

// ------------------------------------------------------------------- journal proofs

function proofField(proof, name, kind) {
  if (proof === null || typeof proof !== 'object' || Array.isArray(proof)) fail(`malformed: the ${kind} proof is not an object`);
  const v = proof[name];
  if (!Number.isSafeInteger(v) || v < 0) fail(`malformed: the ${kind} proof's ${name} is not a non-negative integer`);
  return v;
}

function proofHashes(proof, kind) {
  if (!Array.isArray(proof.hashes)) fail(`malformed: the ${kind} proof's hashes is not an array`);
  return proof.hashes.map((h, i) => asHash(h, `the ${kind} proof's hash ${i}`));
}

/**
 * Verifies that an export line is in the journal a checkpoint vouches for: the checkpoint's
 * signature, then the inclusion proof from the line's leaf hash to its root.
 *
 * @param line the `jsonl` export line of the entry (string or bytes; a trailing "\n" is stripped)
 * @param proof `{leaf_index, tree_size, hashes}` (GET /v1/activity/proof)
 * @param note the checkpoint of size `proof.tree_size`
 * @param vkey the verifier key
 * @returns the verified checkpoint (as verifyCheckpoint)
 * @throws JournalVerificationError
 */
export function verifyInclusion(line, proof, note, vkey) {
  const cp = verifyCheckpoint(note, vkey);
  let leaf = asBytes(line, 'the line');
  if (leaf.length && leaf[leaf.length - 1] === 0x0a) leaf = leaf.subarray(0, -1);
  const index = proofField(proof, 'leaf_index', 'inclusion');
  const size = proofField(proof, 'tree_size', 'inclusion');
  const hashes = proofHashes(proof, 'inclusion');
  if (size !== cp.treeSize) fail(`inclusion: the proof is for tree size ${size}, the checkpoint of size ${cp.treeSize}`);
  const root = rootFromInclusion(leafHash(leaf), index, size, hashes);
  if (!root.equals(cp.rootHash)) fail(`inclusion: the proof of leaf ${index} does not lead to the checkpoint's root (tree size ${size})`);
  return cp;
}

/**
 * Verifies that the log of `newNote` extends the log of `oldNote`: both checkpoints'
 * signatures, then the consistency proof between their roots.
 *
 * @param oldNote the checkpoint of size `proof.from`
 * @param newNote the checkpoint of size `proof.to`
 * @param proof `{from, to, hashes}` (GET /v1/activity/consistency)
 * @param vkey the verifier key
 * @returns {{from: object, to: object}} the two verified checkpoints
 * @throws JournalVerificationError
 */
export function verifyConsistency(oldNote, newNote, proof, vkey) {
  const older = verifyCheckpoint(oldNote, vkey);
  const newer = verifyCheckpoint(newNote, vkey);
  const from = proofField(proof, 'from', 'consistency');
  const to = proofField(proof, 'to', 'consistency');
  const hashes = proofHashes(proof, 'consistency');
  if (from !== older.treeSize) fail(`consistency: the proof is from tree size ${from}, the old checkpoint of size ${older.treeSize}`);
  if (to !== newer.treeSize) fail(`consistency: the proof is to tree size ${to}, the new checkpoint of size ${newer.treeSize}`);
  verifyConsistencyProof(from, to, older.rootHash, newer.rootHash, hashes);
  return { from: older, to: newer };
}
