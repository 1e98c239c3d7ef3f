// Every operation clients/openapi.json marks `x-sovereign-client` is implemented, and the table
// names no other (clients/SPEC.md).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { OPERATIONS, Sovereign } from '../src/index.js';

const OPENAPI = join(dirname(fileURLToPath(import.meta.url)), '../../openapi.json');

function markedOperations(doc) {
  const ids = new Set();
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item ?? {})) {
      if (op && typeof op === 'object' && op['x-sovereign-client'] === true) ids.add(op.operationId);
    }
  }
  return ids;
}

test('every method the table names exists on a client', () => {
  const client = new Sovereign({ baseURL: 'http://127.0.0.1:9', apiKey: 'sk-sov-x' });
  for (const [op, methods] of Object.entries(OPERATIONS)) {
    assert.ok(methods.length > 0, op);
    for (const path of methods) {
      const parts = path.split('.');
      const owner = parts.slice(0, -1).reduce((o, k) => o?.[k], client);
      assert.equal(typeof owner?.[parts.at(-1)], 'function', `${op}: client.${path}`);
    }
  }
});

test('the table maps exactly the operations openapi.json marks x-sovereign-client', { skip: !existsSync(OPENAPI) && 'clients/openapi.json does not exist yet' }, () => {
  const marked = markedOperations(JSON.parse(readFileSync(OPENAPI, 'utf8')));
  assert.ok(marked.size > 0, 'the document marks no operation');
  const missing = [...marked].filter((id) => !(id in OPERATIONS)).sort();
  const extra = Object.keys(OPERATIONS).filter((id) => !marked.has(id)).sort();
  assert.deepEqual(missing, [], `marked in openapi.json, not in OPERATIONS: ${missing.join(', ')}`);
  assert.deepEqual(extra, [], `in OPERATIONS, not marked in openapi.json: ${extra.join(', ')}`);
});

test('each method sends the method and path openapi.json gives its operation', { skip: !existsSync(OPENAPI) && 'clients/openapi.json does not exist yet' }, async () => {
  const doc = JSON.parse(readFileSync(OPENAPI, 'utf8'));
  const routes = {};
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item ?? {})) {
      if (op?.['x-sovereign-client'] === true) routes[op.operationId] = { method: method.toUpperCase(), path };
    }
  }
  let sent = null;
  const client = new Sovereign({
    baseURL: 'http://gateway.invalid',
    apiKey: 'sk-sov-x',
    maxRetries: 0,
    fetch: async (url, init) => {
      sent = { method: init.method, path: new URL(url).pathname };
      const stream = /"stream":true/.test(String(init.body ?? ''));
      return new Response(stream ? 'data: [DONE]\n\n' : '{"object":"list","data":[]}', {
        status: 200,
        headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' },
      });
    },
  });
  const id = 'id_1';
  const args = {
    'chat.completions.create': [{ model: 'm', messages: [] }],
    'embeddings.create': [{ model: 'm', input: 'x' }],
    'models.retrieve': [id],
    'documents.upload': [new Blob(['%PDF']), { filename: 'x.pdf' }],
    'documents.retrieve': [id],
    'documents.get': [id],
    'documents.delete': [id],
    'rag.query': [{ query: 'q' }],
    'admin.teams.create': [{ name: 't' }],
    'admin.teams.retrieve': [id],
    'admin.teams.update': [id, { name: 't' }],
    'admin.teams.delete': [id],
    'admin.keys.create': [{ team_id: 't', role: 'member' }],
    'admin.keys.retrieve': [id],
    'admin.keys.rotate': [id],
    'admin.keys.revoke': [id],
    'admin.policies.upload': [{ document: 'name: x' }],
    'admin.policies.activate': [id],
    'admin.guardrail.set': [{ settings: {} }],
  };
  for (const [op, methods] of Object.entries(OPERATIONS)) {
    const want = routes[op];
    assert.ok(want, op);
    for (const path of methods) {
      sent = null;
      const parts = path.split('.');
      const owner = parts.slice(0, -1).reduce((o, k) => o[k], client);
      const result = owner[parts.at(-1)](...(args[path] ?? []));
      await (typeof result?.[Symbol.asyncIterator] === 'function' && !result.then ? result.next() : result);
      assert.ok(sent, `${path} sent nothing`);
      assert.equal(sent.method, want.method, `${op}: ${path}`);
      assert.equal(sent.path, want.path.replace('{id}', id), `${op}: ${path}`);
    }
  }
});
