// The shared error vectors (tests/vectors/errors.json, clients/SPEC.md "Errors"), answered by a
// scripted local server: each answer raises the kind it names, which is also its parent kind (an
// `instanceof` of every ancestor), keeping the fields the vector lists.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import * as sovereign from '../src/index.js';
import { REPO, freePort } from './helpers.js';

const VECTORS = JSON.parse(readFileSync(join(REPO, 'tests/vectors/errors.json'), 'utf8'));

const KINDS = {
  StatusError: sovereign.APIError,
  BadRequest: sovereign.BadRequestError,
  GuardrailViolation: sovereign.GuardrailViolationError,
  Authentication: sovereign.AuthenticationError,
  PermissionDenied: sovereign.PermissionDeniedError,
  NotFound: sovereign.NotFoundError,
  Conflict: sovereign.ConflictError,
  PayloadTooLarge: sovereign.PayloadTooLargeError,
  UnprocessableEntity: sovereign.UnprocessableEntityError,
  DataResidency: sovereign.DataResidencyError,
  RateLimit: sovereign.RateLimitError,
  BudgetExceeded: sovereign.BudgetExceededError,
  InternalServer: sovereign.InternalServerError,
  ServiceUnavailable: sovereign.ServiceUnavailableError,
};
// The class raised for exactly StatusError (a status with no kind of its own).
const EXACT = { ...KINDS, StatusError: sovereign.SovereignAPIError };

function ancestors(kind) {
  const out = [];
  for (let p = VECTORS.kinds[kind]; p != null; p = VECTORS.kinds[p]) out.push(p);
  return out;
}

describe('shared error vectors', () => {
  let server;
  let client;
  before(async () => {
    server = createServer((req, res) => {
      const v = VECTORS.vectors[Number(req.headers['x-vector'])];
      req.resume();
      req.on('end', () => {
        res.writeHead(v.status, { ...(typeof v.body === 'string' ? {} : { 'content-type': 'application/json' }), ...v.headers });
        res.end(typeof v.body === 'string' ? v.body : JSON.stringify(v.body));
      });
    });
    const port = await freePort();
    await new Promise((r) => server.listen(port, '127.0.0.1', r));
    client = new sovereign.Sovereign({ baseURL: `http://127.0.0.1:${port}`, apiKey: 'sk-sov-test', maxRetries: 0 });
  });
  after(() => new Promise((r) => server.close(r)));

  test('the table names exactly the shared kinds, with their parents', () => {
    assert.deepEqual(Object.keys(KINDS).sort(), Object.keys(VECTORS.kinds).sort());
    for (const [kind, parent] of Object.entries(VECTORS.kinds)) {
      if (parent != null) assert.ok(KINDS[kind].prototype instanceof KINDS[parent], `${kind} < ${parent}`);
    }
  });

  VECTORS.vectors.forEach((v, i) => {
    test(v.name, async () => {
      const err = await client.models.list({ headers: { 'x-vector': String(i) } }).then(
        () => assert.fail('no error'),
        (e) => e,
      );
      assert.equal(err.constructor, EXACT[v.kind], `${err.constructor.name} is not ${v.kind}`);
      assert.equal(v.parent, VECTORS.kinds[v.kind]);
      for (const a of ancestors(v.kind)) assert.ok(err instanceof KINDS[a], `not a ${a}`);
      const got = {
        status: err.status,
        type: err.type ?? null,
        code: err.code ?? null,
        param: err.param ?? null,
        message: err.error?.message ?? null,
        audit_trace_id: err.auditTraceId,
        retry_after: err.retryAfter ?? null,
      };
      for (const [name, want] of Object.entries(v.fields)) assert.deepEqual(got[name], want, name);
    });
  });
});
