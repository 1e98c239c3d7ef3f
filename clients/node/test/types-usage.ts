// Type-checked by `npm test` (tsc --noEmit): the declarations describe how the client is used.
import OpenAI from 'openai';
import Sovereign, {
  BudgetExceededError,
  DataResidencyError,
  GuardrailViolationError,
  OPERATIONS,
  RateLimitError,
  WebhookVerificationError,
  verifyJournalExport,
  verifyWebhook,
  type ActivityEntry,
  type JournalVerification,
  type Sovereignty,
} from '@sovereign-gateway/client';

export async function usage(): Promise<void> {
  const client = new Sovereign({ baseURL: 'http://127.0.0.1:8080', apiKey: 'sk-sov-x', maxRetries: 1 });
  const asOpenAI: OpenAI = client; // it is an OpenAI client
  void asOpenAI;

  const completion = await client.chat.completions.create({
    model: 'auto-router',
    messages: [{ role: 'user', content: 'مرحبا' }],
    routing: { profile: 'cost', classification: 'sensitive' },
    routing_preference: 'balanced',
  });
  const text: string | null = completion.choices[0]!.message.content;
  const s: Sovereignty = completion.sovereignty;
  const residency: string | null = s.dataResidency;
  void text, residency;

  const stream = await client.chat.completions.create({
    model: 'auto-router',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
  });
  const policy: string | null = stream.sovereignty.routePolicy;
  for await (const chunk of stream) {
    const delta: string | null | undefined = chunk.choices[0]?.delta.content;
    void delta;
  }
  void policy;

  const { data, response } = await client.chat.completions
    .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
    .withResponse();
  void data.sovereignty.auditTraceId, response.status;

  const emb = await client.embeddings.create({ model: 'multilingual-e5-small', input: 'x' });
  const dims: number = emb.data[0]!.embedding.length;
  void dims, emb.sovereignty.sovereignId;

  const doc = await client.documents.upload('/tmp/x.pdf', { collection: 'c' });
  const list = await client.documents.list({ collection: 'c' });
  const got = await client.documents.retrieve(doc.id);
  await client.documents.delete(got.id);
  void list.data.length;

  const rag = await client.rag.query({ query: 'q', collection: 'c' });
  const page: number | null = rag.citations[0]!.page;
  void page, rag.confidence;

  const first = await client.activity.query({ limit: 10 });
  const cursor: string | null = first.next_cursor;
  for await (const entry of client.activity.query({ status: 'success' })) {
    const e: ActivityEntry = entry;
    void e.journal_hash;
    const spent: number = (e.charges ?? []).reduce((n, c) => n + c.spend_micros, 0);
    void spent;
  }
  void cursor;
  const jsonl: string = await client.activity.export({ format: 'jsonl' });

  const cp = await client.journal.createCheckpoint();
  const cps = await client.journal.listCheckpoints();
  const report = await client.journal.verify();
  void report.ok;

  const result: JournalVerification = verifyJournalExport(jsonl, {
    checkpoints: [cp, ...cps.data],
    publicKey: cp.public_key,
  });
  if (!result.ok) console.log(result.problem?.reason, result.problem?.line);

  const team = await client.admin.teams.create({ name: 't', plan: 'development' });
  await client.admin.teams.update(team.id, { budget: 10 });
  const key = await client.admin.keys.create({ team_id: team.id, role: 'member' });
  const secret: string = key.key;
  const rotated = await client.admin.keys.rotate(key.id, { grace_seconds: 0 });
  await client.admin.keys.revoke(rotated.id);
  const usage = await client.admin.usage.get({ team_id: team.id });
  void usage.total.requests, secret;
  const policies = await client.admin.policies.list();
  const v = await client.admin.policies.upload({ document: 'name: x', activate: true });
  await client.admin.policies.activate(policies.active ?? v.id);
  const g = await client.admin.guardrail.get();
  await client.admin.guardrail.set({ settings: g.settings as Record<string, unknown> });

  try {
    verifyWebhook('whsec_AAAA', { 'webhook-id': 'x' }, '{}', { toleranceSeconds: 300, now: new Date() });
  } catch (e) {
    if (e instanceof WebhookVerificationError) console.log(e.message);
  }

  try {
    await client.chat.completions.create({ model: 'm', messages: [] });
  } catch (e) {
    if (e instanceof GuardrailViolationError) console.log(e.code, e.auditTraceId);
    if (e instanceof DataResidencyError) console.log(e.status, e.type);
    if (e instanceof BudgetExceededError) console.log(e.status);
    if (e instanceof RateLimitError) console.log(e.retryAfter, e.reset?.toISOString());
    if (e instanceof OpenAI.APIError) console.log(e.status);
  }

  const mtls = new Sovereign({ baseURL: 'https://x', caBundle: '/ca.pem', clientCert: '/c.pem', clientKey: '/c.key' });
  void mtls, OPERATIONS.createChatCompletion;
}
