// A client of the gateway uses only its own settings (SOVEREIGN_* or options), never what the
// wrapped `openai` SDK reads from OPENAI_* (issue 49, bug 1), and fails clearly without a key;
// bytes uploaded without a name carry no misleading extension (bug 4).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, beforeEach, afterEach, describe, test } from 'node:test';

import { Sovereign, UNNAMED_UPLOAD } from '../src/index.js';
import { freePort } from './helpers.js';

const OPENAI_SECRET = 'sk-openai-must-never-leave';
const OPENAI_ENV = {
  OPENAI_API_KEY: OPENAI_SECRET,
  OPENAI_ADMIN_KEY: `${OPENAI_SECRET}-admin`,
  OPENAI_BASE_URL: 'http://openai.invalid/v1',
  OPENAI_ORG_ID: 'org-openai',
  OPENAI_PROJECT_ID: 'proj-openai',
  OPENAI_WEBHOOK_SECRET: 'whsec_openai',
  OPENAI_CUSTOM_HEADERS: `Authorization: Bearer ${OPENAI_SECRET}\nX-From-OpenAI: 1`,
};

describe('only the SOVEREIGN_* settings', () => {
  let server;
  let url;
  const seen = [];
  const saved = {};
  before(async () => {
    server = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        seen.push({ url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('latin1') });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [], id: 'doc_1', filename: 'x' }));
      });
    });
    const port = await freePort();
    await new Promise((r) => server.listen(port, '127.0.0.1', r));
    url = `http://127.0.0.1:${port}`;
  });
  after(() => new Promise((r) => server.close(r)));
  beforeEach(() => {
    for (const k of [...Object.keys(OPENAI_ENV), 'SOVEREIGN_API_KEY', 'SOVEREIGN_BASE_URL']) saved[k] = process.env[k];
    Object.assign(process.env, OPENAI_ENV);
    delete process.env.SOVEREIGN_API_KEY;
    delete process.env.SOVEREIGN_BASE_URL;
    seen.length = 0;
  });
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  test('no key: a clear error naming SOVEREIGN_API_KEY, not the OpenAI key', () => {
    assert.throws(() => new Sovereign({ baseURL: url }), (e) => {
      assert.match(e.message, /SOVEREIGN_API_KEY/);
      assert.doesNotMatch(e.message, /OPENAI_API_KEY/);
      return true;
    });
    assert.throws(() => new Sovereign({ apiKey: 'sk-sov-x' }), /SOVEREIGN_BASE_URL/);
  });

  test('requests carry the SOVEREIGN_* key and address only', async () => {
    process.env.SOVEREIGN_API_KEY = 'sk-sov-mine';
    process.env.SOVEREIGN_BASE_URL = url;
    const client = new Sovereign();
    await client.models.list();
    await client.withOptions({ timeout: 5000 }).models.list();
    assert.equal(seen.length, 2);
    for (const r of seen) {
      assert.equal(r.headers.authorization, 'Bearer sk-sov-mine');
      const sent = JSON.stringify(r.headers).toLowerCase();
      for (const leaked of [OPENAI_SECRET, 'org-openai', 'proj-openai', 'x-from-openai']) {
        assert.ok(!sent.includes(leaked), `${leaked} sent: ${sent}`);
      }
    }
    assert.equal(client.webhookSecret, null);
    assert.equal(client.adminAPIKey, null);
  });

  test('options still win', async () => {
    const client = new Sovereign({ baseURL: url, apiKey: 'sk-sov-arg', organization: 'org-mine' });
    await client.models.list();
    assert.equal(seen[0].headers.authorization, 'Bearer sk-sov-arg');
    assert.equal(seen[0].headers['openai-organization'], 'org-mine');
  });

  test('bytes without a name are sent as `upload`, no extension', async () => {
    const client = new Sovereign({ baseURL: url, apiKey: 'sk-sov-mine' });
    await client.documents.upload(Buffer.from('plain text'));
    await client.documents.upload(new Blob(['more text']));
    assert.equal(UNNAMED_UPLOAD, 'upload');
    for (const r of seen) {
      assert.match(r.body, /filename="upload"\r\n/);
      assert.ok(!r.body.includes('upload.bin'));
    }
  });
});
