// TLS: `sovereign demo --tls`, a CA bundle and a client certificate for mutual TLS (clients/SPEC.md, "TLS").
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { APIConnectionError, Sovereign } from '../src/index.js';
import { startDemo } from './helpers.js';

let demo;
let tlsDir;

before(async () => {
  demo = await startDemo({ tls: true });
  tlsDir = join(demo.dataDir, 'tls');
  assert.match(demo.url, /^https:\/\//);
});

after(async () => {
  await demo?.stop();
});

const ask = (client) =>
  client.chat.completions.create({ model: 'auto-router', messages: [{ role: 'user', content: 'مرحبا، كيف حالك؟' }] });

test('the CA bundle and the client-member certificate: a chat completion with no API key', async () => {
  const client = new Sovereign({
    baseURL: demo.url,
    caBundle: demo.ca ?? join(tlsDir, 'ca.pem'),
    clientCert: join(tlsDir, 'client-member.pem'),
    clientKey: readFileSync(join(tlsDir, 'client-member.key')), // a path or PEM content
  });
  const done = await ask(client);
  assert.ok(done.choices[0].message.content);
  assert.equal(done.sovereignty.dataResidency, 'sa-riyadh-1');

  // The journal names the certificate as the credential.
  const admin = new Sovereign({ baseURL: demo.url, apiKey: demo.keys.admin, caBundle: join(tlsDir, 'ca.pem') });
  const page = await admin.activity.query({ request_id: done.sovereignty.auditTraceId });
  assert.equal(page.data.length, 1);
  assert.equal(page.data[0].auth, 'mtls');
  assert.match(page.data[0].key_id, /^cid_/);
});

test('without the CA: a connection (TLS) error, not retried', async () => {
  let calls = 0;
  const client = new Sovereign({
    baseURL: demo.url,
    apiKey: demo.keys.member,
    fetch: (url, init) => {
      calls++;
      return fetch(url, init);
    },
  });
  const e = await ask(client).then(() => assert.fail('trusted an unknown CA'), (e) => e);
  assert.ok(e instanceof APIConnectionError, e.constructor.name);
  assert.match(String(e.cause?.cause?.code ?? e.cause?.cause?.message ?? e.message), /CERT|certificate|self.signed|issuer|VERIFY/i);
  assert.equal(calls, 1);
});

test('the CA and an API key, no client certificate', async () => {
  const client = new Sovereign({ baseURL: demo.url, apiKey: demo.keys.member, caBundle: join(tlsDir, 'ca.pem') });
  const models = await client.models.list();
  assert.ok(models.data.length > 0);
});
