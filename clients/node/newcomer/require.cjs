// The same package from CommonJS (scripts/newcomer-check node): require() works, and its errors
// are instances of the application's own require('openai') classes.
const assert = require('node:assert/strict');
const OpenAI = require('openai');
const { Sovereign, PermissionDeniedError } = require('@sovereign-gateway/client');

(async () => {
  const member = new Sovereign();
  assert.ok(member instanceof OpenAI.OpenAI);
  const e = await member.journal.listCheckpoints().then(() => assert.fail('a member read the journal'), (err) => err);
  assert.ok(e instanceof PermissionDeniedError && e instanceof OpenAI.PermissionDeniedError, e.constructor.name);
  console.log('require(): ok, PermissionDeniedError is an OpenAI.PermissionDeniedError of require(\'openai\')');
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
