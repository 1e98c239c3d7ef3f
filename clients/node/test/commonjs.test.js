// CommonJS: `require('@sovereign-gateway/client')` works (the `require` export condition,
// src/index.cjs, require(esm) on Node.js >= 20.19), and its classes extend those of the
// application's own `require('openai')`, so `instanceof` keeps matching there too.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const require = createRequire(import.meta.url);

test('require() gives the package, extending the CommonJS openai', async () => {
  const sovereign = require('@sovereign-gateway/client');
  const OpenAI = require('openai');
  assert.equal(typeof sovereign.Sovereign, 'function');
  assert.equal(sovereign.default, sovereign.Sovereign);
  const client = new sovereign.Sovereign({ baseURL: 'http://127.0.0.1:9', apiKey: 'sk-sov-x', maxRetries: 0 });
  assert.ok(client instanceof OpenAI.OpenAI);
  assert.ok(sovereign.GuardrailViolationError.prototype instanceof OpenAI.BadRequestError);
  assert.ok(sovereign.BudgetExceededError.prototype instanceof OpenAI.RateLimitError);
  const err = await client.models.list().then(() => assert.fail('no error'), (e) => e);
  assert.ok(err instanceof OpenAI.APIConnectionError, err.constructor.name);
});
