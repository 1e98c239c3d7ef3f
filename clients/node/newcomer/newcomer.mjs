// A newcomer's first program (scripts/newcomer-check node): the seven tasks of issue 49 against
// `sovereign demo`, with the package installed as the README says (an `npm pack` tarball).
// Environment: SOVEREIGN_BASE_URL and SOVEREIGN_API_KEY (the member key: read by the library
// itself), NEWCOMER_ADMIN_KEY, NEWCOMER_AUDITOR_KEY, NEWCOMER_PDF, NEWCOMER_JOURNAL_PUBKEY.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import OpenAI from 'openai';
import Sovereign, {
  AuthenticationError,
  BadRequestError,
  GuardrailViolationError,
  PermissionDeniedError,
  verifyJournalExport,
} from '@sovereign-gateway/client';

const ARABIC = 'ما هي عاصمة المملكة العربية السعودية؟';
const QUESTION = 'ما هي مدة الاحتفاظ بسجلات العملاء؟';
const env = process.env;

const member = new Sovereign(); // SOVEREIGN_BASE_URL, SOVEREIGN_API_KEY
const admin = new Sovereign({ apiKey: env.NEWCOMER_ADMIN_KEY });
const auditor = new Sovereign({ apiKey: env.NEWCOMER_AUDITOR_KEY });
const messages = [{ role: 'user', content: ARABIC }];

// 1. An Arabic question to auto-router, and where it was served.
const reply = await member.chat.completions.create({ model: 'auto-router', messages });
assert.ok(reply.choices[0].message.content);
assert.equal(reply.sovereignty.dataResidency, 'sa-riyadh-1');
assert.equal(reply.sovereignty.sovereignId, 'demo-riyadh-1');
assert.ok(reply.sovereignty.routePolicy && reply.sovereignty.auditTraceId);
console.log(`1 chat: ${reply.model} in ${reply.sovereignty.dataResidency} by ${reply.sovereignty.routePolicy}`);

// 2. Streaming: the metadata before the first chunk, the text from the chunks.
const stream = await member.chat.completions.create({ model: 'auto-router', messages, stream: true });
assert.equal(stream.sovereignty.dataResidency, 'sa-riyadh-1');
let text = '';
for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
assert.ok(text);
console.log(`2 stream: ${text.length} characters`);

// 3. Embeddings.
const emb = await member.embeddings.create({ model: 'multilingual-e5-small', input: ['مرحبا', 'hello'] });
assert.equal(emb.data.length, 2);
assert.equal(emb.sovereignty.sovereignId, 'demo-riyadh-1');
console.log(`3 embeddings: ${emb.data.length} x ${emb.data[0].embedding.length}`);

// 4. Upload a document (a path) and ask a question with citations.
const collection = `newcomer-${process.pid}`;
const doc = await member.documents.upload(env.NEWCOMER_PDF, { collection });
const rag = await member.rag.query({ query: QUESTION, collection, top_k: 2 });
assert.ok(rag.citations.length > 0);
assert.equal(rag.citations[0].document_id, doc.id);
console.log(`4 rag: cited ${rag.citations[0].document_id} page ${rag.citations[0].page}, confidence ${rag.confidence.toFixed(2)}`);
await member.documents.delete(doc.id);

// 5. The journal: a page of entries, then the export verified offline against the pinned key.
const page = await auditor.activity.query({ limit: 5 });
assert.ok(page.data.length > 0);
await auditor.journal.createCheckpoint();
const jsonl = await auditor.activity.export({ format: 'jsonl' });
const { data: checkpoints } = await auditor.journal.listCheckpoints();
const publicKey = readFileSync(env.NEWCOMER_JOURNAL_PUBKEY, 'utf8').trim();
const verified = verifyJournalExport(jsonl, { checkpoints, publicKey });
assert.ok(verified.ok, JSON.stringify(verified.problem));
console.log(`5 journal: ${page.data.length} listed, ${verified.entries} verified offline, ${verified.checkpointsChecked} checkpoint(s) matched`);

// 6. Typed errors: a member may not read the journal; a card number is a guardrail refusal.
await assert.rejects(member.journal.listCheckpoints(), (e) => e instanceof PermissionDeniedError && e.status === 403);
await assert.rejects(
  member.chat.completions.create({ model: 'auto-router', messages: [{ role: 'user', content: 'card 4111 1111 1111 1111' }] }),
  (e) => e instanceof GuardrailViolationError && e instanceof BadRequestError && e instanceof OpenAI.BadRequestError,
);
console.log('6 errors: PermissionDeniedError (403), GuardrailViolationError (a BadRequestError, also the app\'s OpenAI.BadRequestError)');

// 7. Admin: create a key, use it, revoke it.
const key = await admin.admin.keys.create({ team_id: 'demo', role: 'member', name: collection });
const user = new Sovereign({ apiKey: key.key, maxRetries: 0 });
assert.ok((await user.models.list()).data.length > 0);
await admin.admin.keys.revoke(key.id);
await assert.rejects(user.models.list(), AuthenticationError);
console.log(`7 admin: key ${key.id} created, used, revoked`);
console.log('newcomer: 7 of 7 tasks done');
