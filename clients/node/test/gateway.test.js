// Every method against the real binary: one `sovereign demo` for this file (clients/SPEC.md, "Tests").
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import OpenAI from 'openai';

import {
  AuthenticationError,
  DataResidencyError,
  GuardrailViolationError,
  NotFoundError,
  PermissionDeniedError,
  Sovereign,
  verifyJournalExport,
  verifyWebhook,
} from '../src/index.js';
import { REPO, freePort, isMissingRoute, startDemo } from './helpers.js';

let demo;
let admin;
let member;
let auditor;
let memberCalls = 0;
const ARABIC = 'ما هي عاصمة المملكة العربية السعودية؟';

before(async () => {
  demo = await startDemo();
  const countingFetch = (url, init) => {
    memberCalls++;
    return fetch(url, init);
  };
  admin = new Sovereign({ baseURL: demo.url, apiKey: demo.keys.admin });
  member = new Sovereign({ baseURL: `${demo.url}/v1`, apiKey: demo.keys.member, fetch: countingFetch });
  auditor = new Sovereign({ baseURL: demo.url, apiKey: demo.keys.auditor });
});

after(async () => {
  await demo?.stop();
});

/** The journal's public key (`<data dir>/journal-signing.key.pub`), when the demo wrote it there. */
function journalPublicKey() {
  const p = join(demo.dataDir, 'journal-signing.key.pub');
  return existsSync(p) ? readFileSync(p, 'utf8').trim() : null;
}

describe('inference', () => {
  test('a streamed Arabic answer carries the metadata on the stream, before the first chunk', async () => {
    const stream = await member.chat.completions.create({
      model: 'auto-router',
      messages: [{ role: 'user', content: ARABIC }],
      stream: true,
    });
    const s = stream.sovereignty;
    assert.equal(s.dataResidency, 'sa-riyadh-1');
    assert.equal(s.sovereignId, 'demo-riyadh-1');
    assert.ok(s.routePolicy, 'a route policy');
    assert.ok(s.auditTraceId, 'an audit trace id');
    let text = '';
    let model = null;
    for await (const chunk of stream) {
      model ??= chunk.model;
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.ok(text.length > 0, 'text joined from the chunks');
    assert.equal(model, 'jais-30b-chat');
  });

  test('a whole answer with routing hints carries sovereignty; withResponse() too', async () => {
    const { data, response } = await member.chat.completions
      .create({
        model: 'auto-router',
        messages: [{ role: 'user', content: 'Bonjour, comment allez-vous aujourd’hui ?' }],
        routing: { profile: 'cost' },
        routing_preference: 'balanced',
      })
      .withResponse();
    assert.equal(response.status, 200);
    assert.ok(data.choices[0].message.content);
    assert.equal(data.sovereignty.auditTraceId, response.headers.get('x-audit-trace-id'));
    assert.equal(data.sovereignty.sovereignId, 'demo-riyadh-1');
    assert.ok(data.sovereignty.dataResidency);
    assert.ok(data.sovereignty.routePolicy);
  });

  test('sensitive data with a cloud model: 451 DataResidencyError', async () => {
    const ask = (extra, options) =>
      member.chat.completions.create(
        { model: 'qwen2.5-coder-32b', messages: [{ role: 'user', content: 'Summarise the patient file.' }], ...extra },
        options,
      );
    for (const [extra, options] of [
      [{}, { headers: { 'X-Data-Classification': 'sensitive' } }],
      [{ routing: { classification: 'sensitive' } }, undefined],
    ]) {
      const e = await ask(extra, options).then(() => assert.fail('no 451'), (e) => e);
      assert.ok(e instanceof DataResidencyError, e.constructor.name);
      assert.ok(e instanceof OpenAI.APIError);
      assert.equal(e.status, 451);
      assert.equal(e.code, 'sensitive_requires_local');
      assert.equal(e.type, 'sovereignty_error');
      assert.ok(e.auditTraceId);
    }
  });

  test('a card number: GuardrailViolationError, not retried', async () => {
    const before = memberCalls;
    const e = await member.chat.completions
      .create({ model: 'auto-router', messages: [{ role: 'user', content: 'Charge my card 4111 1111 1111 1111 please' }] })
      .then(() => assert.fail('not blocked'), (e) => e);
    assert.ok(e instanceof GuardrailViolationError, e.constructor.name);
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.code, 'pii_detected');
    assert.equal(memberCalls - before, 1, 'one request');
  });

  test('embeddings carry sovereignty', async () => {
    const emb = await member.embeddings.create({ model: 'multilingual-e5-small', input: ['مرحبا', 'hello'] });
    assert.equal(emb.data.length, 2);
    assert.ok(emb.data[0].embedding.length > 0);
    assert.equal(emb.sovereignty.sovereignId, 'demo-riyadh-1');
    assert.ok(emb.sovereignty.auditTraceId);
    assert.ok(emb.sovereignty.dataResidency);
  });

  test('models: list with family/languages/region, retrieve, unknown', async () => {
    const ids = [];
    for await (const m of member.models.list()) {
      ids.push(m.id);
      assert.ok('family' in m && 'languages' in m && 'region' in m, JSON.stringify(m));
    }
    for (const id of ['jais-30b-chat', 'allam-7b-instruct', 'qwen2.5-coder-32b', 'multilingual-e5-small']) {
      assert.ok(ids.includes(id), id);
    }
    const jais = await member.models.retrieve('jais-30b-chat');
    assert.equal(jais.region, 'sa-riyadh-1');
    assert.ok(jais.languages.includes('ar'));
    assert.equal(jais.sovereignty.sovereignId, 'demo-riyadh-1');
    await assert.rejects(member.models.retrieve('no-such-model'), NotFoundError);
  });
});

describe('admin', () => {
  let team;
  test('teams: create, list, retrieve, update, delete', async () => {
    team = await admin.admin.teams.create({ name: 'node-client-team', plan: 'development' });
    assert.ok(team.id);
    assert.equal(team.sovereignty.sovereignId, 'demo-riyadh-1');
    const list = await admin.admin.teams.list();
    assert.ok(list.data.some((t) => t.id === team.id));
    assert.equal((await admin.admin.teams.retrieve(team.id)).name, 'node-client-team');
    const updated = await admin.admin.teams.update(team.id, { name: 'node-client-team-2' });
    assert.equal(updated.name, 'node-client-team-2');
    const spare = await admin.admin.teams.create({ name: 'node-client-spare' });
    const deleted = await admin.admin.teams.delete(spare.id);
    assert.equal(deleted.deleted, true);
    await assert.rejects(admin.admin.teams.retrieve(spare.id), NotFoundError);
  });

  test('keys: create, use, rotate, revoke → AuthenticationError', async () => {
    const created = await admin.admin.keys.create({ team_id: team.id, role: 'member', name: 'node-client' });
    assert.match(created.key, /^sk-sov-/);
    const listed = await admin.admin.keys.list({ team_id: team.id });
    assert.ok(listed.data.some((k) => k.id === created.id));
    assert.ok(listed.data.every((k) => !('key' in k)), 'no secret in lists');
    const got = await admin.admin.keys.retrieve(created.id);
    assert.equal(got.id, created.id);
    assert.equal(got.key, undefined);

    const user = new Sovereign({ baseURL: demo.url, apiKey: created.key, maxRetries: 0 });
    assert.ok((await user.models.list()).data.length > 0);

    const rotated = await admin.admin.keys.rotate(created.id, { grace_seconds: 0 });
    assert.match(rotated.key, /^sk-sov-/);
    assert.notEqual(rotated.key, created.key);
    await assert.rejects(user.models.list(), AuthenticationError);
    const user2 = new Sovereign({ baseURL: demo.url, apiKey: rotated.key, maxRetries: 0 });
    assert.ok((await user2.models.retrieve('jais-30b-chat')).id);

    const revoked = await admin.admin.keys.revoke(rotated.id ?? created.id);
    assert.ok(revoked.id);
    const e = await user2.models.list().then(() => assert.fail('a revoked key worked'), (e) => e);
    assert.ok(e instanceof AuthenticationError, e.constructor.name);
    assert.ok(e instanceof OpenAI.AuthenticationError);
    assert.equal(e.status, 401);
  });

  test('an auditor may not create a key: PermissionDeniedError', async () => {
    const e = await auditor.admin.keys
      .create({ team_id: 'demo', role: 'member' })
      .then(() => assert.fail('created'), (e) => e);
    assert.ok(e instanceof PermissionDeniedError, e.constructor.name);
    assert.equal(e.status, 403);
  });

  test('usage', async () => {
    const usage = await admin.admin.usage.get({ team_id: 'demo' });
    assert.equal(usage.object, 'list');
    assert.ok(usage.total.requests >= 1);
    assert.ok(usage.data.every((r) => r.team_id === 'demo'));
    assert.ok((await auditor.admin.usage.get()).data);
  });

  test('policies: list, upload a routing document, activate the earlier version again', async () => {
    const before = await admin.admin.policies.list();
    const original = before.active;
    assert.ok(original);
    const yaml = readFileSync(join(demo.dataDir, 'routing.yaml'), 'utf8').replace(
      /^name: .*$/m,
      'name: node-client-policy',
    );
    const uploaded = await admin.admin.policies.upload({ document: yaml });
    assert.notEqual(uploaded.id, original);
    assert.equal(uploaded.active, true);
    assert.equal((await admin.admin.policies.list()).active, uploaded.id);
    const done = await member.chat.completions.create({ model: 'auto-router', messages: [{ role: 'user', content: ARABIC }] });
    assert.equal(done.sovereignty.routePolicy, 'node-client-policy');

    const back = await admin.admin.policies.activate(original);
    assert.equal(back.id, original);
    assert.equal((await admin.admin.policies.list()).active, original);
    await assert.rejects(admin.admin.policies.activate('pol_does_not_exist'), NotFoundError);
  });

  test('guardrail: get, set', async () => {
    const g = await admin.admin.guardrail.get();
    assert.equal(g.object, 'guardrail');
    assert.ok(g.component_sha256);
    const settings = typeof g.settings === 'string' ? JSON.parse(g.settings) : g.settings;
    const set = await admin.admin.guardrail.set({ settings });
    assert.equal(set.component_sha256, g.component_sha256);
    // still blocking cards
    await assert.rejects(
      member.chat.completions.create({ model: 'auto-router', messages: [{ role: 'user', content: 'card 4111111111111111' }] }),
      GuardrailViolationError,
    );
  });
});

describe('documents and RAG', () => {
  const fixture = join(REPO, 'host/documents/tests/fixtures/ar_harfbuzz.pdf');
  const modelsReady = existsSync(join(REPO, 'models'));

  test('upload, list, get, query with citations, delete', { skip: !modelsReady && `${REPO}/models is not installed` }, async () => {
    const collection = `node-${process.pid}`;
    const doc = await member.documents.upload(fixture, { collection, metadata: { source: 'node-client' } });
    assert.match(doc.id, /./);
    assert.equal(doc.collection, collection);
    assert.equal(doc.filename, 'ar_harfbuzz.pdf');
    assert.ok(doc.chunks > 0);
    assert.ok(doc.sovereignty.auditTraceId);

    const list = await member.documents.list({ collection });
    assert.deepEqual(list.data.map((d) => d.id), [doc.id]);
    assert.equal((await auditor.documents.retrieve(doc.id)).sha256, doc.sha256);
    assert.equal((await member.documents.get(doc.id)).id, doc.id);

    const rag = await member.rag.query({ query: 'HarfBuzz', collection, min_confidence: 0 });
    assert.equal(rag.object, 'rag.result');
    assert.equal(typeof rag.confidence, 'number');
    assert.ok(rag.citations.length > 0, JSON.stringify(rag));
    const c = rag.citations[0];
    assert.equal(c.document_id, doc.id);
    assert.equal(typeof c.text, 'string');
    assert.equal(typeof c.score, 'number');
    assert.ok('page' in c && 'paragraph' in c);

    const bytes = new Blob([readFileSync(fixture)], { type: 'application/pdf' });
    const again = await member.documents.upload(bytes, { collection, filename: 'copy.pdf' });
    assert.equal(again.sha256, doc.sha256);

    // Bytes without a name: sent as `upload` (no extension), so the gateway sniffs them as text
    // (it refused `upload.bin` with 415, "the bytes are text").
    const text = await member.documents.upload(Buffer.from('The retention period is ten years.\n'), { collection });
    assert.equal(text.filename, 'upload');
    await member.documents.delete(text.id);

    const deleted = await member.documents.delete(doc.id);
    assert.equal(deleted.deleted, true);
    await assert.rejects(member.documents.retrieve(doc.id), NotFoundError);
  });
});

describe('activity journal', () => {
  test('query: one page, and every entry across pages', async () => {
    const first = await auditor.activity.query({ limit: 3 });
    assert.equal(first.data.length, 3);
    assert.ok(first.next_cursor);
    assert.ok(first.sovereignty.auditTraceId);
    const seen = [];
    for await (const e of admin.activity.query({ limit: 4, to: new Date(Date.now() + 1000).toISOString() })) {
      seen.push(e);
    }
    assert.ok(seen.length > 8, `${seen.length} entries`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].seq > seen[i - 1].seq);
    let pages = 0;
    for await (const page of admin.activity.query({ limit: 5, status: 'blocked' }).pages()) {
      pages++;
      assert.ok(page.data.every((e) => e.status === 'blocked'));
    }
    assert.ok(pages >= 1);
    await assert.rejects(member.activity.query({}), PermissionDeniedError);
  });

  test('export: jsonl verifies offline; an edited line does not; csv', async () => {
    const jsonl = await admin.activity.export({ format: 'jsonl' });
    const lines = jsonl.split('\n').filter(Boolean);
    assert.ok(lines.length > 10);
    const ok = verifyJournalExport(jsonl);
    assert.equal(ok.ok, true, JSON.stringify(ok.problem));
    assert.equal(ok.entries, lines.length);
    assert.equal(ok.firstSeq, 1);
    assert.equal(ok.gaps, 0);

    const k = 5;
    const edited = [...lines];
    const e = JSON.parse(edited[k]);
    e.status = e.status === 'success' ? 'error' : 'success';
    edited[k] = JSON.stringify(e);
    const bad = verifyJournalExport(edited.join('\n'));
    assert.equal(bad.ok, false);
    assert.match(bad.problem.reason, /^edited/);
    assert.equal(bad.problem.line, k + 1);
    assert.equal(bad.problem.seq, e.seq);

    const filtered = await admin.activity.export({ format: 'jsonl', status: 'rejected' });
    const f = verifyJournalExport(filtered);
    assert.equal(f.ok, true, JSON.stringify(f.problem));

    const csv = await auditor.activity.export({ format: 'csv', limit: 5 });
    const rows = csv.trim().split('\n');
    assert.match(rows[0], /seq/);
    assert.ok(rows.length >= 2);
  });

  test('server-side verification', async () => {
    const report = await admin.journal.verify();
    assert.equal(report.ok, true, JSON.stringify(report));
    await assert.rejects(auditor.journal.verify(), PermissionDeniedError);
  });

  test('checkpoints: created, listed, matched offline; another pinned key is untrusted', async (t) => {
    let cp;
    try {
      cp = await admin.journal.createCheckpoint();
    } catch (e) {
      if (isMissingRoute(e)) return t.skip(`this binary has no POST /v1/admin/journal/checkpoints yet (${e.status})`);
      throw e;
    }
    assert.match(cp.signature, /^ed25519:/);
    assert.equal(cp.sovereign_id, 'demo-riyadh-1');
    const listed = await admin.journal.listCheckpoints();
    assert.equal(listed.object, 'list');
    assert.ok(listed.data.some((c) => c.seq === cp.seq && c.signature === cp.signature));

    const pub = journalPublicKey();
    if (pub) assert.equal(pub, cp.public_key);
    const jsonl = await admin.activity.export({ format: 'jsonl' });
    const r = verifyJournalExport(jsonl, { checkpoints: listed.data, publicKey: pub ?? cp.public_key });
    assert.equal(r.ok, true, JSON.stringify(r.problem));
    assert.ok(r.checkpointsChecked >= 1);
    const lines = jsonl.split('\n').filter(Boolean);

    const other = 'ed25519:' + '11'.repeat(32);
    const u = verifyJournalExport(jsonl, { checkpoints: [cp], publicKey: other });
    assert.equal(u.ok, false);
    assert.match(u.problem.reason, /^untrusted key/);

    const truncated = lines.filter((l) => JSON.parse(l).seq < cp.seq);
    const tr = verifyJournalExport(truncated, { checkpoints: [cp] });
    assert.match(tr.problem.reason, /^truncated/);
  });
});

describe('webhooks', () => {
  test('a delivery from the gateway verifies with its secret; a tampered body does not', async () => {
    const received = [];
    let notify;
    const got = new Promise((r) => (notify = r));
    const receiver = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(204).end();
        notify();
      });
    });
    const port = await freePort();
    await new Promise((r) => receiver.listen(port, '127.0.0.1', r));
    try {
      // Webhook subscriptions are not in the client surface: the SDK's raw methods reach them.
      const sub = await admin.post('/admin/webhooks', {
        body: { url: `http://127.0.0.1:${port}/hook`, events: ['guardrail.violation'] },
      });
      assert.match(sub.secret, /^whsec_/);
      await admin.post(`/admin/webhooks/${sub.id}/test`);
      await Promise.race([got, new Promise((_, fail) => setTimeout(() => fail(new Error('no delivery in 15 s')), 15_000))]);
      const { headers, body } = received[0];
      const payload = verifyWebhook(sub.secret, headers, body);
      assert.equal(payload.event, 'webhook.test');
      assert.throws(() => verifyWebhook(sub.secret, headers, Buffer.concat([body, Buffer.from(' ')])), /signature/);
      assert.throws(
        () => verifyWebhook(sub.secret, headers, body, { now: Number(headers['webhook-timestamp']) + 301 }),
        /tolerance/,
      );
      await admin.delete(`/admin/webhooks/${sub.id}`);
    } finally {
      receiver.closeAllConnections?.();
      await new Promise((r) => receiver.close(r));
    }
  });
});
