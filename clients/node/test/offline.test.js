// What needs no gateway: journal verification on a synthetic chain, webhook signatures, error
// mapping and SPEC.md's retry rules against a scripted local HTTP server.
import assert from 'node:assert/strict';
import { createHash, createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { after, before, describe, test } from 'node:test';

import OpenAI from 'openai';

import {
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  BudgetExceededError,
  ConflictError,
  DataResidencyError,
  GENESIS_HASH,
  GuardrailViolationError,
  InternalServerError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  Sovereign,
  UnprocessableEntityError,
  WebhookVerificationError,
  canonicalJson,
  normalizeBaseURL,
  verifyJournalExport,
  verifyWebhook,
} from '../src/index.js';
import { freePort } from './helpers.js';

// ----- a synthetic chain, hashed and signed as docs/JOURNAL.md says ------------------------

function chain(n, start = 1, prev = GENESIS_HASH) {
  const lines = [];
  for (let seq = start; seq < start + n; seq++) {
    const entry = {
      seq,
      prev_hash: prev,
      timestamp: `2026-11-22T21:31:${String(seq % 60).padStart(2, '0')}.123Z`,
      request_id: `req-${seq}`,
      actor_id: 'أحمد "the\tactor"',
      team_id: 'team-1',
      key_id: 'key_1',
      action: 'chat.completions',
      model: seq % 2 ? 'jais-30b-chat' : null,
      prompt_hash: null,
      routing_policy: 'sovereign-default',
      residency_boundary: 'sa-riyadh-1',
      status: 'success',
      prompt_tokens: 12,
      completion_tokens: null,
      latency_us: 1000 + seq,
    };
    const hash = 'sha256:' + createHash('sha256').update(prev + canonicalJson(entry)).digest('hex');
    lines.push(canonicalJson({ ...entry, journal_hash: hash }));
    prev = hash;
  }
  return lines;
}

const keys = generateKeyPairSync('ed25519');
const rawPublic = (k) => k.export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
const PUB = 'ed25519:' + rawPublic(keys.publicKey);

function checkpoint(lines, seq, { privateKey = keys.privateKey, publicKey = PUB, sovereignId = 'demo-riyadh-1' } = {}) {
  const entry = lines.map((l) => JSON.parse(l)).find((e) => e.seq === seq);
  const cp = {
    count: seq,
    head_hash: entry ? entry.journal_hash : 'sha256:' + 'ab'.repeat(32),
    public_key: publicKey,
    seq,
    sovereign_id: sovereignId,
    timestamp: '2026-11-22T21:32:00.000Z',
  };
  const signature = 'ed25519:' + sign(null, Buffer.from(canonicalJson(cp)), privateKey).toString('hex');
  return { ...cp, signature };
}

// Two entries as the gateway writes them, the second with `charges` (docs/JOURNAL.md); hashes
// computed with Python's `rfc8785` package, independently of canonicalJson.
const CHARGED_EXPORT = [
  '{"action":"models.list","actor_id":"key_1","auth":"key","completion_tokens":null,' +
    '"journal_hash":"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13",' +
    '"key_id":"key_1","latency_us":812,"model":null,' +
    '"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000",' +
    '"prompt_hash":null,"prompt_tokens":null,"request_id":"req-1","residency_boundary":null,' +
    '"routing_policy":null,"seq":1,"status":"success","team_id":"team_1",' +
    '"timestamp":"2026-11-22T21:31:47.123Z"}',
  '{"action":"chat.completions","actor_id":"key_1","auth":"key","charges":[{"model":"local-llama",' +
    '"spend_micros":42,"tokens_in":10,"tokens_out":20},{"model":"jais-30b-chat","spend_micros":0,' +
    '"tokens_in":7,"tokens_out":0}],"completion_tokens":20,' +
    '"journal_hash":"sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee",' +
    '"key_id":"key_1","latency_us":1234,"model":"local-llama",' +
    '"prev_hash":"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13",' +
    '"prompt_hash":"sha256:abababababababababababababababababababababababababababababababab",' +
    '"prompt_tokens":10,"request_id":"req-2","residency_boundary":"eu-west",' +
    '"routing_policy":"sovereign-default","seq":2,"status":"success","team_id":"team_1",' +
    '"timestamp":"2026-11-22T21:31:48.456Z"}',
];

describe('canonical JSON (RFC 8785)', () => {
  test('sorts keys, escapes only what it must, keeps non-ASCII raw', () => {
    assert.equal(
      canonicalJson({ b: 1, a: 'x"\\\n\u0001é', c: null, A: [true, 2] }),
      '{"A":[true,2],"a":"x\\"\\\\\\n\\u0001é","b":1,"c":null}',
    );
  });

  test('sorts the keys of objects inside arrays (an entry\'s charges)', () => {
    assert.equal(
      canonicalJson({ z: [{ tokens_out: 20, model: 'm', tokens_in: 10, spend_micros: 42 }], a: null }),
      '{"a":null,"z":[{"model":"m","spend_micros":42,"tokens_in":10,"tokens_out":20}]}',
    );
  });
});

describe('verifyJournalExport', () => {
  const lines = chain(6);
  const text = lines.join('\n') + '\n';

  test('an intact export verifies, from text or lines', () => {
    for (const input of [text, lines, Buffer.from(text)]) {
      const r = verifyJournalExport(input);
      assert.equal(r.ok, true, JSON.stringify(r.problem));
      assert.deepEqual(
        [r.entries, r.firstSeq, r.headSeq, r.gaps, r.headHash],
        [6, 1, 6, 0, JSON.parse(lines[5]).journal_hash],
      );
    }
  });

  test('an edited entry fails on its line', () => {
    const bad = [...lines];
    const e = JSON.parse(bad[3]);
    e.status = 'blocked';
    bad[3] = JSON.stringify(e);
    const r = verifyJournalExport(bad);
    assert.equal(r.ok, false);
    assert.match(r.problem.reason, /^edited/);
    assert.deepEqual([r.problem.line, r.problem.seq], [4, 4]);
  });

  test('an entry with charges verifies as hashed by the reference; an edited charge does not', () => {
    let r = verifyJournalExport(CHARGED_EXPORT);
    assert.equal(r.ok, true, JSON.stringify(r.problem));
    assert.deepEqual(
      [r.entries, r.headHash],
      [2, 'sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee'],
    );
    // re-encoded, not trusted as written: the charges' keys in another order still verify
    const second = JSON.parse(CHARGED_EXPORT[1]);
    second.charges = second.charges.map((c) => Object.fromEntries(Object.entries(c).reverse()));
    assert.equal(verifyJournalExport([CHARGED_EXPORT[0], JSON.stringify(second)]).ok, true);
    r = verifyJournalExport([CHARGED_EXPORT[0], CHARGED_EXPORT[1].replace('"spend_micros":42', '"spend_micros":41')]);
    assert.match(r.problem.reason, /^edited/);
    assert.equal(r.problem.line, 2);
    second.charges.reverse();
    assert.match(verifyJournalExport([CHARGED_EXPORT[0], JSON.stringify(second)]).problem.reason, /^edited/);
  });

  test('malformed, reordered, broken link, gaps', () => {
    let r = verifyJournalExport([lines[0], '{not json']);
    assert.match(r.problem.reason, /^malformed/);
    assert.equal(r.problem.line, 2);
    r = verifyJournalExport([lines[0], '{"seq":2}']);
    assert.match(r.problem.reason, /^malformed/);

    r = verifyJournalExport([lines[0], lines[2], lines[1]]);
    assert.match(r.problem.reason, /^reordered/);
    assert.equal(r.problem.line, 3);

    const other = chain(3, 1, GENESIS_HASH.replace(/0$/, '1')); // not from genesis
    r = verifyJournalExport([other[0]]);
    assert.match(r.problem.reason, /^broken link/);
    const spliced = chain(2, 5, 'sha256:' + 'cd'.repeat(32)); // seqs 5,6 from elsewhere
    r = verifyJournalExport([lines[3], spliced[0]]);
    assert.match(r.problem.reason, /^broken link/);
    assert.equal(r.problem.line, 2);

    r = verifyJournalExport([lines[0], lines[2], lines[5]]); // a filtered export
    assert.equal(r.ok, true);
    assert.equal(r.gaps, 2);
  });

  test('checkpoints: matched, rewritten, truncated, bad signature, untrusted key', () => {
    const cp = checkpoint(lines, 4);
    let r = verifyJournalExport(text, { checkpoints: [cp], publicKey: PUB });
    assert.equal(r.ok, true, JSON.stringify(r.problem));
    assert.equal(r.checkpointsChecked, 1);
    // as JSON lines, too
    r = verifyJournalExport(text, { checkpoints: JSON.stringify(cp) + '\n' });
    assert.equal(r.checkpointsChecked, 1);

    // every entry from seq 3 on rewritten, hashes recomputed: self-consistent, but not the checkpoint's
    let prev = JSON.parse(lines[1]).journal_hash;
    const rechained = lines.map((line, i) => {
      if (i < 2) return line;
      const { journal_hash: _, ...e } = JSON.parse(line);
      Object.assign(e, { prev_hash: prev, model: 'qwen2.5-coder-32b' });
      prev = 'sha256:' + createHash('sha256').update(prev + canonicalJson(e)).digest('hex');
      return canonicalJson({ ...e, journal_hash: prev });
    });
    assert.equal(verifyJournalExport(rechained).ok, true);
    r = verifyJournalExport(rechained, { checkpoints: [cp] });
    assert.match(r.problem.reason, /^rewritten/);
    assert.equal(r.problem.line, 4);

    r = verifyJournalExport(lines.slice(0, 3), { checkpoints: [cp] });
    assert.match(r.problem.reason, /^truncated/);
    // a filtered export cannot tell truncation
    assert.equal(verifyJournalExport([lines[0], lines[2]], { checkpoints: [cp] }).ok, true);

    r = verifyJournalExport(text, { checkpoints: [{ ...cp, count: 5 }] });
    assert.match(r.problem.reason, /^bad signature/);

    const mallory = generateKeyPairSync('ed25519');
    const forged = checkpoint(lines, 4, {
      privateKey: mallory.privateKey,
      publicKey: 'ed25519:' + rawPublic(mallory.publicKey),
    });
    assert.equal(verifyJournalExport(text, { checkpoints: [forged] }).ok, true); // self-signed: fine unpinned
    r = verifyJournalExport(text, { checkpoints: [forged], publicKey: PUB });
    assert.match(r.problem.reason, /^untrusted key/);
    r = verifyJournalExport(text, { checkpoints: [cp], publicKey: 'ed25519:' + rawPublic(mallory.publicKey) });
    assert.match(r.problem.reason, /^untrusted key/);

    // another chain's checkpoints are not used
    const elsewhere = checkpoint(lines, 9, { sovereignId: 'eu-1' });
    r = verifyJournalExport(text, { checkpoints: [cp, elsewhere] });
    assert.equal(r.ok, true, JSON.stringify(r.problem));
    assert.equal(r.checkpointsChecked, 1);
  });
});

describe('verifyWebhook', () => {
  const secret = 'whsec_' + Buffer.from('a secret of thirty-two bytes!!!!').toString('base64');
  const body = '{"event":"webhook.test","details":{"webhook_id":"wh_1"}}';
  const now = 1_800_000_000;
  const signed = (id, ts, b, key = secret) =>
    'v1,' + createHmac('sha256', Buffer.from(key.slice(6), 'base64')).update(`${id}.${ts}.${b}`).digest('base64');
  const headers = {
    'Webhook-Id': 'evt_1',
    'webhook-timestamp': String(now),
    'webhook-signature': signed('evt_1', now, body),
  };

  test('a valid signature returns the payload; any one of several may match', () => {
    assert.deepEqual(verifyWebhook(secret, headers, body, { now }), JSON.parse(body));
    const rotated = { ...headers, 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')} ${headers['webhook-signature']}` };
    assert.equal(verifyWebhook(secret, new Headers(rotated), Buffer.from(body), { now: new Date(now * 1000) }).event, 'webhook.test');
    assert.ok(verifyWebhook(secret, new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])), body, { now: now + 299 }));
  });

  test('a tampered body, another secret, an old or future timestamp, missing headers fail', () => {
    assert.throws(() => verifyWebhook(secret, headers, body.replace('wh_1', 'wh_2'), { now }), WebhookVerificationError);
    const other = 'whsec_' + Buffer.from('another secret').toString('base64');
    assert.throws(() => verifyWebhook(other, headers, body, { now }), WebhookVerificationError);
    assert.throws(() => verifyWebhook(secret, headers, body, { now: now + 301 }), /tolerance/);
    assert.throws(() => verifyWebhook(secret, headers, body, { now: now - 301 }), WebhookVerificationError);
    assert.ok(verifyWebhook(secret, headers, body, { now: now + 3000, toleranceSeconds: 3600 }));
    const { 'webhook-signature': _, ...unsigned } = headers;
    assert.throws(() => verifyWebhook(secret, unsigned, body, { now }), WebhookVerificationError);
    const old = { ...headers, 'webhook-timestamp': String(now - 3600), 'webhook-signature': signed('evt_1', now - 3600, body) };
    assert.throws(() => verifyWebhook(secret, old, body, { now }), WebhookVerificationError);
  });
});

// ----- errors and retries against a scripted server ------------------------------------------

describe('errors and retries (scripted server)', () => {
  let server;
  let url;
  const hits = new Map();
  const err = (status, type, code, extra = {}) => ({ status, body: { error: { message: `${type} ${code}`, type, param: null, code } }, ...extra });
  const scenarios = {
    ok: () => ({ status: 200 }),
    flaky: (n) => (n <= 2 ? err(503, 'server_error', 'upstream_unavailable') : { status: 200 }),
    bad_gateway: () => err(502, 'server_error', null),
    server_error: () => err(500, 'server_error', null),
    conflict: () => err(409, 'invalid_request_error', 'conflict'),
    guardrail: () => err(400, 'guardrail_violation', 'pii_detected'),
    residency: () => err(451, 'sovereignty_error', 'sensitive_requires_local'),
    budget: () => err(429, 'insufficient_quota', 'insufficient_quota'),
    budget_code: () => err(429, 'rate_limit_exceeded', 'insufficient_quota'),
    rate: (n) => (n === 1 ? err(429, 'rate_limit_exceeded', 'rate_limit_exceeded', { headers: { 'retry-after': '1', 'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 1) } }) : { status: 200 }),
    rate_reset: (n) => (n === 1 ? err(429, 'rate_limit_exceeded', 'rate_limit_exceeded', { headers: { 'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 1) } }) : { status: 200 }),
    always_rate: () => err(429, 'rate_limit_exceeded', 'rate_limit_exceeded', { headers: { 'retry-after': '0' } }),
    s400: () => err(400, 'invalid_request_error', null),
    s401: () => err(401, 'authentication_error', 'revoked_api_key'),
    s403: () => err(403, 'permission_error', 'insufficient_permissions'),
    s404: () => err(404, 'invalid_request_error', 'not_found'),
    s413: () => err(413, 'invalid_request_error', 'request_too_large'),
    s422: () => err(422, 'invalid_request_error', null),
  };

  before(async () => {
    server = createServer((req, res) => {
      const name = req.headers['x-scenario'] || 'ok';
      const n = (hits.get(name) ?? 0) + 1;
      hits.set(name, n);
      req.resume();
      req.on('end', () => {
        const r = scenarios[name](n);
        const body = r.body ?? {
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: 'jais-30b-chat',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        };
        res.writeHead(r.status, {
          'content-type': 'application/json',
          'x-sovereign-id': 'test-1',
          'x-audit-trace-id': `req-${name}-${n}`,
          'x-route-policy': 'sovereign-default',
          'x-data-residency': 'sa-riyadh-1',
          ...r.headers,
        });
        res.end(JSON.stringify(body));
      });
    });
    const port = await freePort();
    await new Promise((r) => server.listen(port, '127.0.0.1', r));
    url = `http://127.0.0.1:${port}`;
  });
  after(() => new Promise((r) => server.close(r)));

  const client = (opts = {}) => new Sovereign({ baseURL: url, apiKey: 'sk-sov-test', ...opts });
  const chat = (c, scenario) =>
    c.chat.completions.create(
      { model: 'auto-router', messages: [{ role: 'user', content: 'x' }] },
      { headers: { 'x-scenario': scenario } },
    );
  async function fails(scenario, Kind, { calls = 1, c = client(), call = chat } = {}) {
    hits.delete(scenario);
    const e = await call(c, scenario).then(
      () => assert.fail(`${scenario}: no error`),
      (e) => e,
    );
    assert.ok(e instanceof Kind, `${scenario}: ${e?.constructor?.name} is not ${Kind.name}`);
    assert.ok(e instanceof OpenAI.APIError, `${scenario}: not an OpenAI.APIError`);
    assert.equal(hits.get(scenario), calls, `${scenario}: calls`);
    return e;
  }

  test('base URL: the root or …/v1; env variables', () => {
    assert.equal(normalizeBaseURL('http://h:1'), 'http://h:1/v1');
    assert.equal(normalizeBaseURL('http://h:1/v1/'), 'http://h:1/v1');
    process.env.SOVEREIGN_BASE_URL = 'http://env:2/';
    process.env.SOVEREIGN_API_KEY = 'sk-sov-env';
    try {
      const c = new Sovereign();
      assert.equal(c.baseURL, 'http://env:2/v1');
      assert.equal(c.apiKey, 'sk-sov-env');
    } finally {
      delete process.env.SOVEREIGN_BASE_URL;
      delete process.env.SOVEREIGN_API_KEY;
    }
    assert.throws(() => new Sovereign({ baseURL: url }), /SOVEREIGN_API_KEY/);
    assert.ok(new Sovereign({ baseURL: url, apiKey: 'k' }) instanceof OpenAI);
  });

  test('sovereignty on the completion, also through withResponse()', async () => {
    const c = client();
    const done = await chat(c, 'ok');
    assert.deepEqual({ ...done.sovereignty }, {
      sovereignId: 'test-1',
      auditTraceId: done.sovereignty.auditTraceId,
      routePolicy: 'sovereign-default',
      dataResidency: 'sa-riyadh-1',
    });
    assert.match(done.sovereignty.auditTraceId, /^req-ok-/);
    assert.equal(JSON.stringify(done).includes('sovereignty'), false); // not in the body
    const { data, response } = await chat(c, 'ok').withResponse();
    assert.equal(data.sovereignty.dataResidency, 'sa-riyadh-1');
    assert.equal(response.status, 200);
  });

  test('status errors map to the typed kinds, keeping type/code/param/trace id', async () => {
    const g = await fails('guardrail', GuardrailViolationError);
    assert.ok(g instanceof BadRequestError && g instanceof OpenAI.BadRequestError);
    assert.deepEqual([g.status, g.type, g.code, g.param], [400, 'guardrail_violation', 'pii_detected', null]);
    assert.equal(g.auditTraceId, 'req-guardrail-1');
    assert.equal(g.sovereignId, 'test-1');
    assert.match(g.message, /guardrail_violation pii_detected/);
    const r = await fails('residency', DataResidencyError);
    assert.deepEqual([r.status, r.type, r.code], [451, 'sovereignty_error', 'sensitive_requires_local']);
    const b = await fails('budget', BudgetExceededError);
    assert.ok(b instanceof OpenAI.RateLimitError && b instanceof RateLimitError); // SPEC.md: a RateLimit subkind
    await fails('budget_code', BudgetExceededError);
    await fails('s400', BadRequestError);
    await fails('s401', AuthenticationError);
    await fails('s403', PermissionDeniedError);
    await fails('s404', NotFoundError);
    await fails('conflict', ConflictError); // the SDK alone would retry a 409
    await fails('s413', PayloadTooLargeError);
    await fails('s422', UnprocessableEntityError);
    await fails('server_error', InternalServerError); // 500: not retried
  });

  test('503, 502 retried with backoff; 0 disables; non-idempotent calls are not retried', async () => {
    hits.delete('flaky');
    const done = await chat(client(), 'flaky');
    assert.equal(done.choices[0].message.content, 'ok');
    assert.equal(hits.get('flaky'), 3);
    const e = await fails('flaky', ServiceUnavailableError, { c: client({ maxRetries: 0 }) });
    assert.ok(e instanceof InternalServerError);
    await fails('bad_gateway', InternalServerError, { calls: 3 });
    const create = (c, s) => c.admin.teams.create({ name: 't' }, { headers: { 'x-scenario': s } });
    await fails('flaky', ServiceUnavailableError, { call: create });
  });

  test('429 waits for Retry-After / X-RateLimit-Reset, also for non-idempotent calls', async () => {
    for (const scenario of ['rate', 'rate_reset']) {
      hits.delete(scenario);
      const t0 = Date.now();
      await client().admin.keys.create({ team_id: 't', role: 'member' }, { headers: { 'x-scenario': scenario } });
      assert.equal(hits.get(scenario), 2);
      assert.ok(Date.now() - t0 >= 200, `${scenario}: retried after ${Date.now() - t0} ms`);
    }
    const e = await fails('always_rate', RateLimitError, { calls: 3 });
    assert.equal(e.retryAfter, 0);
    hits.delete('rate');
    const first = await fails('rate', RateLimitError, { c: client({ maxRetries: 0 }) });
    assert.equal(first.retryAfter, 1);
    assert.ok(first.reset instanceof Date);
  });

  test('connection errors: retried, then APIConnectionError', async () => {
    let calls = 0;
    const counting = (u, i) => {
      calls++;
      return fetch(u, i);
    };
    const dead = `http://127.0.0.1:${await freePort()}`;
    const c = new Sovereign({ baseURL: dead, apiKey: 'k', fetch: counting, maxRetries: 1 });
    await assert.rejects(c.models.retrieve('x'), APIConnectionError);
    assert.equal(calls, 2);
    calls = 0;
    // refused before sending: safe to retry even a non-idempotent call
    await assert.rejects(c.admin.keys.revoke('key_1'), APIConnectionError);
    assert.equal(calls, 2);
  });
});
