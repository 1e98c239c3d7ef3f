// The transparency log against the real binary (issue 48): one `sovereign demo` for this file.
// Requests, then the checkpoint, its key, an inclusion proof of a request's entry and a
// consistency proof between two checkpoints, all verified offline. A binary without the routes
// fails these tests (it does not skip them).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  JournalVerificationError,
  NotFoundError,
  PermissionDeniedError,
  Sovereign,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from '../src/index.js';
import { startDemo } from './helpers.js';

let demo;
let admin;
let member;
let auditor;

before(async () => {
  demo = await startDemo();
  admin = new Sovereign({ baseURL: demo.url, apiKey: demo.keys.admin });
  member = new Sovereign({ baseURL: demo.url, apiKey: demo.keys.member });
  auditor = new Sovereign({ baseURL: demo.url, apiKey: demo.keys.auditor });
});

after(async () => {
  await demo?.stop();
});

/** A chat request by the member: its journal request id and the answering gateway's id. */
async function chat(text) {
  const { data, response } = await member.chat.completions
    .create({ model: 'auto-router', messages: [{ role: 'user', content: text }], max_tokens: 16 })
    .withResponse();
  assert.ok(data.choices[0].message.content !== undefined);
  const id = response.headers.get('x-audit-trace-id');
  assert.ok(id, 'the answer names its journal entry (X-Audit-Trace-ID)');
  return { requestId: id, sovereignId: response.headers.get('x-sovereign-id') };
}

/** The export line of a request's entry (without its newline), once the journal holds it. */
async function exportLine(requestId, deadline = Date.now() + 20_000) {
  for (;;) {
    const text = await admin.activity.export({ format: 'jsonl', request_id: requestId });
    const lines = text.split('\n').filter((l) => l !== '');
    if (lines.length === 1) return lines[0];
    assert.equal(lines.length, 0, `the export of request ${requestId} is ${lines.length} lines`);
    if (Date.now() > deadline) assert.fail(`request ${requestId} is not in the journal after 20 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The checkpoint (verified) once it covers at least `size` entries. */
async function checkpointOf(vkey, size, deadline = Date.now() + 20_000) {
  for (;;) {
    const note = await admin.activity.checkpoint();
    const cp = verifyCheckpoint(note, vkey);
    if (cp.treeSize >= size) return { note, cp };
    if (Date.now() > deadline) assert.fail(`the checkpoint stays at size ${cp.treeSize}, below ${size}, for 20 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('transparency log', () => {
  test('checkpoint, key, inclusion and consistency proofs verify offline', async () => {
    const first = await chat('Say hello in three words.');
    const firstLine = await exportLine(first.requestId);
    const firstSeq = JSON.parse(firstLine).seq;

    const vkey = await admin.activity.checkpointKey();
    assert.match(vkey, /^[^+\s]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/);
    assert.equal(vkey.split('+')[0], `sovereign-gateway/journal/${first.sovereignId}`);
    assert.equal(await auditor.activity.checkpointKey(), vkey);

    const old = await checkpointOf(vkey, firstSeq);
    assert.equal(old.cp.origin, vkey.split('+')[0]);
    assert.equal(old.cp.rootHash.length, 32);

    // More entries, then a newer checkpoint that covers them.
    const later = [];
    for (const text of ['One more, please.', 'And another one.', 'The last one.']) later.push(await chat(text));
    const lastLine = await exportLine(later.at(-1).requestId);
    const now = await checkpointOf(vkey, JSON.parse(lastLine).seq);
    assert.ok(now.cp.treeSize > old.cp.treeSize);

    // Inclusion of the first request in the newer tree, and in the older one (the default
    // size is the latest checkpoint's: give the size the note is of).
    for (const { note, cp } of [now, old]) {
      const proof = await admin.activity.inclusionProof(first.requestId, { treeSize: cp.treeSize });
      assert.equal(proof.leaf_index, firstSeq - 1);
      assert.equal(proof.tree_size, cp.treeSize);
      assert.equal(verifyInclusion(firstLine, proof, note, vkey).treeSize, cp.treeSize);
      assert.equal(verifyInclusion(`${firstLine}\n`, proof, note, vkey).treeSize, cp.treeSize);
      // The same line edited does not verify.
      const edited = firstLine.replace(/"latency_us":(\d+)/, (_, n) => `"latency_us":${Number(n) + 1}`);
      assert.notEqual(edited, firstLine);
      assert.throws(() => verifyInclusion(edited, proof, note, vkey), (e) => e instanceof JournalVerificationError && e.reason.startsWith('inclusion'));
    }
    // The default size is the latest checkpoint's (the log may have grown since the note).
    const latest = await admin.activity.checkpoint();
    const latestSize = verifyCheckpoint(latest, vkey).treeSize;
    const dflt = await admin.activity.inclusionProof(later[0].requestId);
    assert.ok(dflt.tree_size >= latestSize, `default size ${dflt.tree_size} below the checkpoint's ${latestSize}`);
    const laterLine = await exportLine(later[0].requestId);
    const atLatest = dflt.tree_size === latestSize ? dflt : await admin.activity.inclusionProof(later[0].requestId, { treeSize: latestSize });
    verifyInclusion(laterLine, atLatest, latest, vkey);

    // Consistency: the older tree is a prefix of the newer one.
    const proof = await admin.activity.consistencyProof(old.cp.treeSize, now.cp.treeSize);
    assert.equal(proof.from, old.cp.treeSize);
    assert.equal(proof.to, now.cp.treeSize);
    const both = verifyConsistency(old.note, now.note, proof, vkey);
    assert.ok(both.from.rootHash.equals(old.cp.rootHash) && both.to.rootHash.equals(now.cp.rootHash));
    // Swapped checkpoints do not verify.
    assert.throws(() => verifyConsistency(now.note, old.note, proof, vkey), JournalVerificationError);
    // Equal sizes: an empty proof.
    const same = await admin.activity.consistencyProof(now.cp.treeSize, now.cp.treeSize);
    assert.deepEqual(same.hashes, []);
    verifyConsistency(now.note, now.note, same, vkey);
  });

  test('errors: unknown request 404, from=0 400, a member 403', async () => {
    await assert.rejects(admin.activity.inclusionProof('req-does-not-exist'), NotFoundError);
    await assert.rejects(admin.activity.consistencyProof(0, 1), (e) => e.status === 400);
    await assert.rejects(member.activity.checkpoint(), PermissionDeniedError);
    await assert.rejects(member.activity.checkpointKey(), PermissionDeniedError);
  });
});
