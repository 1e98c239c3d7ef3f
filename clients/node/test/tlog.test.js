// The transparency-log verifiers (issue 48) against the shared vectors tests/vectors/tlog.json,
// and against trees and notes built here (an independent RFC 9162 reference and a fresh key).
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import {
  JournalVerificationError,
  NotFoundError,
  Sovereign,
  leafHash,
  rootFromInclusion,
  verifyCheckpoint,
  verifyConsistency,
  verifyConsistencyProof,
  verifyInclusion,
} from '../src/index.js';

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '../../../tests/vectors/tlog.json');
const PREFIXES = ['malformed', 'bad signature', 'untrusted key', 'inclusion', 'consistency'];

/** The vectors; a missing or unreadable file fails every vector test (it does not skip). */
let vectors = null;
let vectorsProblem = null;
try {
  vectors = JSON.parse(readFileSync(VECTORS, 'utf8'));
} catch (e) {
  vectorsProblem = `${VECTORS}: ${e.message}`;
}
function v() {
  if (!vectors) assert.fail(vectorsProblem);
  return vectors;
}

const b64 = (b) => Buffer.from(b).toString('base64');
const hex = (h) => Buffer.from(h, 'hex');

/** The reason prefix a bad vector's `why` starts with (`<prefix>: …`); a `why` without one fails the test. */
function expectedPrefix(why) {
  const p = PREFIXES.find((x) => String(why).startsWith(`${x}:`));
  assert.ok(p, `the vector's why ${JSON.stringify(why)} starts with none of ${PREFIXES.join(', ')}`);
  return p;
}

/** Runs f, which must throw a JournalVerificationError whose reason starts with `prefix` (one of PREFIXES when null). */
function assertFails(f, prefix, label) {
  let err = null;
  try {
    f();
  } catch (e) {
    err = e;
  }
  assert.ok(err, `${label}: verified, but must fail${prefix ? ` with "${prefix}…"` : ''}`);
  assert.ok(err instanceof JournalVerificationError, `${label}: ${err?.name}: ${err?.message}`);
  assert.equal(err.reason, err.message);
  if (prefix) assert.ok(err.reason.startsWith(prefix), `${label}: reason "${err.reason}" does not start with "${prefix}"`);
  else assert.ok(PREFIXES.some((p) => err.reason.startsWith(p)), `${label}: reason "${err.reason}" starts with none of ${PREFIXES}`);
  return err;
}

// ------------------------------------------------------------------- shared vectors

function treeSuite(name) {
  describe(`vectors: ${name} trees`, () => {
    test('roots and inclusion proofs of every leaf', () => {
      const t = v()[name];
      const leaves = t.leaves_hex.map(hex);
      const roots = new Map(t.roots.map((r) => [r.tree_size, Buffer.from(r.root_hash, 'base64')]));
      assert.ok(t.inclusion.length > 0);
      for (const p of t.inclusion) {
        const root = rootFromInclusion(leafHash(leaves[p.leaf_index]), p.leaf_index, p.tree_size, p.hashes);
        assert.ok(roots.has(p.tree_size), `no root for size ${p.tree_size}`);
        assert.equal(b64(root), b64(roots.get(p.tree_size)), `leaf ${p.leaf_index} of ${p.tree_size}`);
        // Base64 strings and bytes alike.
        const again = rootFromInclusion(leafHash(leaves[p.leaf_index]), p.leaf_index, p.tree_size, p.hashes.map((h) => Buffer.from(h, 'base64')));
        assert.ok(again.equals(root));
      }
    });

    test('the roots agree with a reference tree built here', () => {
      const t = v()[name];
      const leaves = t.leaves_hex.map(hex);
      for (const r of t.roots) {
        assert.equal(b64(mth(leaves.slice(0, r.tree_size))), r.root_hash, `root of size ${r.tree_size}`);
      }
    });

    test('consistency proofs of every pair', () => {
      const t = v()[name];
      const roots = new Map(t.roots.map((r) => [r.tree_size, r.root_hash]));
      assert.ok(t.consistency.length > 0);
      for (const p of t.consistency) {
        assert.equal(verifyConsistencyProof(p.from, p.to, roots.get(p.from), roots.get(p.to), p.hashes), true, `${p.from} → ${p.to}`);
      }
    });

    test('a proof against another root, or with one hash changed, fails', () => {
      const t = v()[name];
      const leaves = t.leaves_hex.map(hex);
      const roots = new Map(t.roots.map((r) => [r.tree_size, Buffer.from(r.root_hash, 'base64')]));
      for (const p of t.inclusion.filter((x) => x.hashes.length > 0).slice(0, 40)) {
        const hashes = p.hashes.map((h) => Buffer.from(h, 'base64'));
        hashes[0] = Buffer.from(hashes[0]);
        hashes[0][0] ^= 1;
        const root = rootFromInclusion(leafHash(leaves[p.leaf_index]), p.leaf_index, p.tree_size, hashes);
        assert.ok(!root.equals(roots.get(p.tree_size)));
      }
      for (const p of t.consistency.filter((x) => x.from < x.to).slice(0, 40)) {
        const hashes = p.hashes.map((h) => Buffer.from(h, 'base64'));
        const last = hashes.length - 1;
        hashes[last] = Buffer.from(hashes[last]);
        hashes[last][31] ^= 0x80;
        assertFails(() => verifyConsistencyProof(p.from, p.to, roots.get(p.from), roots.get(p.to), hashes), 'consistency', `${p.from} → ${p.to}`);
      }
    });
  });
}
treeSuite('rfc9162');
treeSuite('generated');

describe('vectors: bad proofs', () => {
  test('every bad inclusion proof fails with its reason', () => {
    const bad = v().bad_inclusion;
    assert.ok(bad.length > 0);
    for (const c of bad) {
      assertFails(
        () => {
          const root = rootFromInclusion(leafHash(hex(c.leaf_hex)), c.leaf_index, c.tree_size, c.hashes);
          if (!root.equals(Buffer.from(c.root_hash, 'base64'))) {
            throw new JournalVerificationError('inclusion: the proof does not lead to the root');
          }
        },
        expectedPrefix(c.why),
        `bad inclusion (${c.why})`,
      );
    }
  });

  test('every bad consistency proof fails with its reason', () => {
    const bad = v().bad_consistency;
    assert.ok(bad.length > 0);
    for (const c of bad) {
      assertFails(
        () => verifyConsistencyProof(c.from, c.to, c.root1, c.root2, c.hashes),
        expectedPrefix(c.why),
        `bad consistency (${c.why})`,
      );
    }
  });
});

describe('vectors: notes', () => {
  test('every valid note verifies to its origin, size and root', () => {
    const valid = v().notes.valid;
    assert.ok(valid.length > 0);
    for (const c of valid) {
      const cp = verifyCheckpoint(c.note, c.vkey);
      assert.equal(cp.origin, c.origin);
      assert.equal(cp.treeSize, c.tree_size);
      assert.equal(b64(cp.rootHash), c.root_hash);
      // As bytes too, and with the key endpoint's trailing newline.
      const again = verifyCheckpoint(Buffer.from(c.note, 'utf8'), `${c.vkey}\n`);
      assert.equal(again.treeSize, c.tree_size);
    }
  });

  test('every invalid note fails with its reason', () => {
    const invalid = v().notes.invalid;
    assert.ok(invalid.length > 0);
    for (const c of invalid) {
      assertFails(() => verifyCheckpoint(c.note, c.vkey), expectedPrefix(c.why), `invalid note (${c.why})`);
    }
  });
});

describe('vectors: journal', () => {
  function checkpointOf(j, size) {
    const cp = j.checkpoints.find((c) => c.tree_size === size);
    assert.ok(cp, `no checkpoint of size ${size} in the vectors`);
    return cp.note;
  }

  test('each checkpoint verifies and its root is the tree of the first lines', () => {
    const j = v().journal;
    assert.ok(j.checkpoints.length > 0);
    for (const c of j.checkpoints) {
      const cp = verifyCheckpoint(c.note, j.vkey);
      assert.equal(cp.treeSize, c.tree_size);
      const leaves = j.lines.slice(0, c.tree_size).map((l) => Buffer.from(l, 'utf8'));
      assert.equal(b64(cp.rootHash), b64(mth(leaves)));
    }
  });

  test('every inclusion proof verifies (a line with its trailing newline too)', () => {
    const j = v().journal;
    assert.ok(j.inclusion.length > 0);
    for (const p of j.inclusion) {
      const note = checkpointOf(j, p.tree_size);
      const cp = verifyInclusion(j.lines[p.leaf_index], p, note, j.vkey);
      assert.equal(cp.treeSize, p.tree_size);
      verifyInclusion(`${j.lines[p.leaf_index]}\n`, p, note, j.vkey);
      verifyInclusion(Buffer.from(j.lines[p.leaf_index], 'utf8'), p, note, j.vkey);
    }
  });

  test('every consistency proof verifies', () => {
    const j = v().journal;
    assert.ok(j.consistency.length > 0);
    for (const p of j.consistency) {
      const { from, to } = verifyConsistency(checkpointOf(j, p.from), checkpointOf(j, p.to), p, j.vkey);
      assert.equal(from.treeSize, p.from);
      assert.equal(to.treeSize, p.to);
    }
  });

  test('every bad case fails with its reason', () => {
    const j = v().journal;
    assert.ok(j.bad.length > 0);
    for (const c of j.bad) {
      const label = `journal bad ${c.kind} (${c.why})`;
      if (c.kind === 'inclusion') {
        const line = c.line ?? j.lines[c.proof?.leaf_index ?? c.leaf_index];
        const proof = c.proof ?? { leaf_index: c.leaf_index, tree_size: c.tree_size, hashes: c.hashes };
        const note = c.note ?? checkpointOf(j, proof.tree_size);
        assertFails(() => verifyInclusion(line, proof, note, c.vkey ?? j.vkey), expectedPrefix(c.why), label);
      } else if (c.kind === 'consistency') {
        const proof = c.proof ?? { from: c.from, to: c.to, hashes: c.hashes };
        const oldNote = c.old_note ?? checkpointOf(j, proof.from);
        const newNote = c.new_note ?? checkpointOf(j, proof.to);
        assertFails(() => verifyConsistency(oldNote, newNote, proof, c.vkey ?? j.vkey), expectedPrefix(c.why), label);
      } else {
        assert.fail(`${label}: unknown kind`);
      }
    }
  });
});

// ------------------------------------------------------------------- built here

function sha256(...parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}
const node = (l, r) => sha256(Buffer.from([1]), l, r);
const split = (n) => 2 ** Math.floor(Math.log2(n - 1)); // largest power of two below n
/** RFC 9162 MTH. */
function mth(d) {
  if (d.length === 0) return sha256(Buffer.alloc(0));
  if (d.length === 1) return sha256(Buffer.from([0]), d[0]);
  const k = split(d.length);
  return node(mth(d.slice(0, k)), mth(d.slice(k)));
}
/** RFC 9162 PATH(m, D). */
function path(m, d) {
  if (d.length <= 1) return [];
  const k = split(d.length);
  return m < k ? [...path(m, d.slice(0, k)), mth(d.slice(k))] : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
}
/** RFC 9162 PROOF(m, D). */
function proof(m, d) {
  const sub = (m, d, b) => {
    if (m === d.length) return b ? [] : [mth(d)];
    const k = split(d.length);
    return m <= k ? [...sub(m, d.slice(0, k), b), mth(d.slice(k))] : [...sub(m - k, d.slice(k), false), mth(d.slice(0, k))];
  };
  return sub(m, d, true);
}

/** A fresh Ed25519 signer: its vkey, and notes it signs. */
function signer(name) {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  const algKey = Buffer.concat([Buffer.from([1]), raw]);
  const id = sha256(Buffer.from(name), Buffer.from([0x0a]), algKey).subarray(0, 4);
  const vkey = `${name}+${id.toString('hex')}+${b64(algKey)}`;
  const sigLine = (text, keyName = name, keyId = id) =>
    `\u2014 ${keyName} ${b64(Buffer.concat([keyId, sign(null, Buffer.from(text), privateKey)]))}\n`;
  const note = (size, root, { origin = name, extra = '' } = {}) => {
    const text = `${origin}\n${size}\n${b64(root)}\n${extra}`;
    return `${text}\n${sigLine(text)}`;
  };
  return { vkey, id, note, sigLine, privateKey };
}

describe('built here', () => {
  const leaves = Array.from({ length: 21 }, (_, i) => Buffer.from(`{"seq":${i + 1},"x":"é"}`));
  const origin = 'sovereign-gateway/journal/test-1';
  const s = signer(origin);

  test('inclusion and consistency over every size of a 21-leaf tree', () => {
    for (let n = 1; n <= leaves.length; n++) {
      const root = mth(leaves.slice(0, n));
      const note = s.note(n, root);
      for (let i = 0; i < n; i++) {
        const p = { leaf_index: i, tree_size: n, hashes: path(i, leaves.slice(0, n)).map(b64) };
        verifyInclusion(leaves[i], p, note, s.vkey);
        if (n > 1) {
          const other = leaves[(i + 1) % n];
          assertFails(() => verifyInclusion(other, p, note, s.vkey), 'inclusion', `other line, ${i} of ${n}`);
        }
      }
      for (let m = 1; m <= n; m++) {
        const p = { from: m, to: n, hashes: proof(m, leaves.slice(0, n)).map(b64) };
        verifyConsistency(s.note(m, mth(leaves.slice(0, m))), note, p, s.vkey);
      }
    }
  });

  test('a forked log, a truncated proof, swapped checkpoints, m = 0', () => {
    const forked = [...leaves.slice(0, 10), Buffer.from('forged')];
    const p = { from: 7, to: 11, hashes: proof(7, forked).map(b64) };
    const oldNote = s.note(7, mth(leaves.slice(0, 7)));
    verifyConsistency(oldNote, s.note(11, mth(forked)), p, s.vkey);
    assertFails(() => verifyConsistency(oldNote, s.note(11, mth(leaves.slice(0, 11))), p, s.vkey), 'consistency', 'fork');
    const truncated = { ...p, hashes: p.hashes.slice(0, -1) };
    assertFails(() => verifyConsistency(oldNote, s.note(11, mth(forked)), truncated, s.vkey), 'consistency', 'truncated');
    assertFails(() => verifyConsistency(s.note(11, mth(forked)), oldNote, p, s.vkey), 'consistency', 'swapped');
    assertFails(() => verifyConsistencyProof(0, 3, mth([]), mth(leaves.slice(0, 3)), []), 'consistency', 'm = 0');
    const same = mth(leaves.slice(0, 5));
    assert.equal(verifyConsistencyProof(5, 5, same, same, []), true);
    assertFails(() => verifyConsistencyProof(5, 5, same, mth(leaves.slice(0, 4)), []), 'consistency', 'm = n, two roots');
    assertFails(() => verifyConsistencyProof(5, 5, same, same, [b64(same)]), 'consistency', 'm = n, a hash');
  });

  test('inclusion: wrong size, index past the end, a short hash', () => {
    const root = mth(leaves.slice(0, 6));
    const p = { leaf_index: 2, tree_size: 6, hashes: path(2, leaves.slice(0, 6)).map(b64) };
    assertFails(() => verifyInclusion(leaves[2], { ...p, tree_size: 7 }, s.note(6, root), s.vkey), 'inclusion', 'size');
    assertFails(() => rootFromInclusion(leafHash(leaves[2]), 6, 6, p.hashes), 'inclusion', 'index');
    assertFails(() => rootFromInclusion(leafHash(leaves[2]), 2, 6, [...p.hashes, p.hashes[0]]), 'inclusion', 'one too many');
    assertFails(() => rootFromInclusion(leafHash(leaves[2]), 2, 6, p.hashes.slice(1)), 'inclusion', 'one too few');
    assertFails(() => rootFromInclusion(leafHash(leaves[2]), 2, 6, [b64(Buffer.alloc(31)), ...p.hashes.slice(1)]), 'malformed', 'short hash');
  });

  test('notes: other keys ignored, a bad signature, an unknown key, malformed notes', () => {
    const root = mth(leaves.slice(0, 3));
    const note = s.note(3, root);
    const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
    const other = signer('witness.example/w1');
    // Another key's signature line, before and after ours, is ignored.
    verifyCheckpoint(`${text}\n${other.sigLine(text)}${s.sigLine(text)}`, s.vkey);
    const cp = verifyCheckpoint(`${text}\n${s.sigLine(text)}${other.sigLine(text)}`, s.vkey);
    assert.deepEqual(cp, { origin, treeSize: 3, rootHash: root, extensions: [] });
    // Only the other key.
    assertFails(() => verifyCheckpoint(`${text}\n${other.sigLine(text)}`, s.vkey), 'untrusted key', 'only another key');
    // Our name with another key id is another key.
    assertFails(() => verifyCheckpoint(`${text}\n${s.sigLine(text, origin, Buffer.from('abcd'))}`, s.vkey), 'untrusted key', 'another key id');
    // A known-key signature that fails, even next to one that verifies.
    const tampered = text.replace('\n3\n', '\n4\n');
    assertFails(() => verifyCheckpoint(`${tampered}\n${s.sigLine(text)}`, s.vkey), 'bad signature', 'tampered size');
    const good = s.sigLine(text);
    const raw = Buffer.from(good.slice(good.lastIndexOf(' ') + 1, -1), 'base64');
    raw[raw.length - 1] ^= 0x01; // one bit of the Ed25519 signature
    const badSig = `${good.slice(0, good.lastIndexOf(' ') + 1)}${b64(raw)}\n`;
    assertFails(() => verifyCheckpoint(`${text}\n${s.sigLine(text)}${badSig}`, s.vkey), 'bad signature', 'one bad of two');
    // The note is of another origin (signed by that origin's key).
    assertFails(() => verifyCheckpoint(other.note(3, root), s.vkey), 'untrusted key', 'another origin');
    // Extension lines are signed and returned.
    const ext = verifyCheckpoint(s.note(3, root, { extra: 'ext-one\n' }), s.vkey);
    assert.deepEqual(ext.extensions, ['ext-one']);
    // Malformed ones.
    const malformed = {
      'leading zero': s.note('03', root),
      'negative size': s.note('-3', root),
      'short root': `${origin}\n3\n${b64(Buffer.alloc(31))}\n`,
      'no signature': `${text}\n`,
      'no blank line': `${text}${s.sigLine(text)}`,
      'carriage return': s.note(3, root).replace('\n3\n', '\r\n3\n'),
      'tab in origin': s.note(3, root, { origin: `${origin}\t` }),
      'empty extension': s.note(3, root, { extra: 'a\n\nb\n' }),
      'no trailing newline': s.note(3, root).slice(0, -1),
      'seventeen signatures': `${text}\n${s.sigLine(text).repeat(17)}`,
      'signature line without dash': `${text}\n${s.sigLine(text).slice(2)}`,
      'missing root': `${origin}\n3\n\n${s.sigLine(`${origin}\n3\n`)}`,
    };
    malformed['short root'] += `\n${s.sigLine(malformed['short root'])}`;
    for (const [label, n] of Object.entries(malformed)) assertFails(() => verifyCheckpoint(n, s.vkey), 'malformed', label);
    // Malformed verifier keys.
    const [name, id, key] = [origin, s.id.toString('hex'), s.vkey.split('+').slice(2).join('+')];
    for (const [label, vk] of Object.entries({
      'wrong key id': `${name}+00000000+${key}`,
      'upper-case id': `${name}+${id.toUpperCase()}+${key}`,
      'no key': `${name}+${id}`,
      'another algorithm': `${name}+${id}+${b64(Buffer.concat([Buffer.from([2]), Buffer.from(key, 'base64').subarray(1)]))}`,
    })) {
      if (label === 'upper-case id' && id === id.toUpperCase()) continue;
      assertFails(() => verifyCheckpoint(note, vk), 'malformed', label);
    }
  });

  test('a key written as the spec says matches one from a raw private key', () => {
    // RFC 8032 test 1: the key id of the vkey depends only on name and key.
    const priv = createPrivateKey({
      key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), hex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60')]),
      format: 'der',
      type: 'pkcs8',
    });
    const raw = createPublicKey(priv).export({ format: 'der', type: 'spki' }).subarray(12);
    assert.equal(raw.toString('hex'), 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    const text = 'example.com/log\n0\n' + b64(sha256(Buffer.alloc(0))) + '\n';
    const algKey = Buffer.concat([Buffer.from([1]), raw]);
    const id = sha256(Buffer.from('example.com/log\n'), algKey).subarray(0, 4);
    const note = `${text}\n\u2014 example.com/log ${b64(Buffer.concat([id, sign(null, Buffer.from(text), priv)]))}\n`;
    const cp = verifyCheckpoint(note, `example.com/log+${id.toString('hex')}+${b64(algKey)}`);
    assert.equal(cp.treeSize, 0);
    assert.ok(cp.rootHash.equals(sha256(Buffer.alloc(0))));
  });
});

describe('client.activity: the log endpoints (a fake gateway)', () => {
  function fakeClient(answer) {
    const sent = [];
    const client = new Sovereign({
      baseURL: 'http://gateway.invalid',
      apiKey: 'sk-sov-x',
      maxRetries: 0,
      fetch: async (url, init) => {
        const u = new URL(url);
        sent.push({ method: init.method, path: u.pathname, query: Object.fromEntries(u.searchParams), accept: new Headers(init.headers).get('accept') });
        return answer(u);
      },
    });
    return { client, sent };
  }

  test('checkpoint and key as text, proofs as JSON, with their queries', async () => {
    const s = signer('sovereign-gateway/journal/fake');
    const leaves = ['a', 'b', 'c'].map((x) => Buffer.from(x));
    const note = s.note(3, mth(leaves));
    const { client, sent } = fakeClient((u) => {
      const text = (body) => new Response(body, { headers: { 'content-type': 'text/plain; charset=utf-8', 'x-sovereign-id': 'fake-1' } });
      const json = (body) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });
      if (u.pathname === '/v1/activity/checkpoint') return text(note);
      if (u.pathname === '/v1/activity/checkpoint/key') return text(`${s.vkey}\n`);
      if (u.pathname === '/v1/activity/proof') return json({ leaf_index: 1, tree_size: 3, hashes: path(1, leaves).map(b64) });
      if (u.pathname === '/v1/activity/consistency') return json({ from: 1, to: 3, hashes: proof(1, leaves).map(b64) });
      return new Response('{"error":{"message":"no","type":"not_found_error","param":null,"code":null}}', { status: 404 });
    });
    assert.equal(await client.activity.checkpoint(), note);
    assert.equal(await client.activity.checkpoint({ replica: 'jed-2' }), note);
    const vkey = await client.activity.checkpointKey();
    assert.equal(vkey, s.vkey);
    const p = await client.activity.inclusionProof('req-1');
    await client.activity.inclusionProof('req-1', { treeSize: 3 });
    verifyInclusion('b', p, note, vkey);
    const c = await client.activity.consistencyProof(1, 3);
    verifyConsistency(s.note(1, mth(leaves.slice(0, 1))), note, c, vkey);
    assert.deepEqual(
      sent.map(({ method, path: p, query }) => [method, p, query]),
      [
        ['GET', '/v1/activity/checkpoint', {}],
        ['GET', '/v1/activity/checkpoint', { replica: 'jed-2' }],
        ['GET', '/v1/activity/checkpoint/key', {}],
        ['GET', '/v1/activity/proof', { request_id: 'req-1' }],
        ['GET', '/v1/activity/proof', { request_id: 'req-1', tree_size: '3' }],
        ['GET', '/v1/activity/consistency', { from: '1', to: '3' }],
      ],
    );
    assert.match(sent[0].accept, /text\/plain/);
  });

  test('an error answer is the typed error', async () => {
    const { client } = fakeClient(
      () => new Response('{"error":{"message":"unknown request","type":"not_found_error","param":"request_id","code":null}}', { status: 404, headers: { 'content-type': 'application/json' } }),
    );
    await assert.rejects(client.activity.inclusionProof('req-x'), NotFoundError);
    await assert.rejects(client.activity.checkpoint(), NotFoundError);
  });
});
