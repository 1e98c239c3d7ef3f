// @sovereign-gateway/client: the OpenAI SDK's client, pointed at a Sovereign Gateway, with the
// gateway's extras (clients/SPEC.md): sovereignty metadata on every answer, typed errors,
// SPEC.md's retries, TLS options, documents, RAG, the activity journal and the admin API.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

import { Agent, fetch as undiciFetch } from 'undici';

import OpenAI from './openai.js';

import * as Errors from './errors.js';
import { makeSovereignError } from './errors.js';

export * from './errors.js';
export { verifyJournalExport, verifyWebhook, canonicalJson, GENESIS_HASH } from './verify.js';
export {
  JournalVerificationError,
  MAX_NOTE_SIGNATURES,
  leafHash,
  rootFromInclusion,
  verifyCheckpoint,
  verifyConsistency,
  verifyConsistencyProof,
  verifyInclusion,
} from './tlog.js';

/** Per-request options key: the call must not be repeated once sent (except after a 429). */
export const NON_IDEMPOTENT = Symbol.for('sovereign.nonIdempotent');
/** Per-attempt state shared with the fetch wrapper (the last connection error). */
const STATE = Symbol.for('sovereign.requestState');
/** Marks our fetch wrapper, with what it wraps. */
const WRAPPED = Symbol.for('sovereign.fetch');
/** Response -> the state of the request it answers. */
const responseState = new WeakMap();

const MAX_WAIT_MS = 60_000;

/** Every `x-sovereign-client` operationId of clients/openapi.json -> the method(s) implementing it. */
export const OPERATIONS = Object.freeze({
  createChatCompletion: ['chat.completions.create'],
  createEmbedding: ['embeddings.create'],
  listModels: ['models.list'],
  retrieveModel: ['models.retrieve'],
  uploadDocument: ['documents.upload'],
  listDocuments: ['documents.list'],
  retrieveDocument: ['documents.retrieve', 'documents.get'],
  deleteDocument: ['documents.delete'],
  queryRag: ['rag.query'],
  queryActivityLogs: ['activity.query', 'activity.export'],
  verifyJournal: ['journal.verify'],
  createJournalCheckpoint: ['journal.createCheckpoint'],
  listJournalCheckpoints: ['journal.listCheckpoints'],
  getActivityCheckpoint: ['activity.checkpoint'],
  getActivityCheckpointKey: ['activity.checkpointKey'],
  getInclusionProof: ['activity.inclusionProof'],
  getConsistencyProof: ['activity.consistencyProof'],
  listTeams: ['admin.teams.list'],
  createTeam: ['admin.teams.create'],
  retrieveTeam: ['admin.teams.retrieve'],
  updateTeam: ['admin.teams.update'],
  deleteTeam: ['admin.teams.delete'],
  listKeys: ['admin.keys.list'],
  createKey: ['admin.keys.create'],
  retrieveKey: ['admin.keys.retrieve'],
  rotateKey: ['admin.keys.rotate'],
  revokeKey: ['admin.keys.revoke'],
  getUsage: ['admin.usage.get'],
  listPolicies: ['admin.policies.list'],
  uploadPolicy: ['admin.policies.upload'],
  activatePolicy: ['admin.policies.activate'],
  getGuardrail: ['admin.guardrail.get'],
  setGuardrail: ['admin.guardrail.set'],
});

/** The sovereignty metadata of an answer's headers. */
export function sovereigntyFromHeaders(headers) {
  const get = (n) => headers?.get?.(n) ?? null;
  return Object.freeze({
    sovereignId: get('x-sovereign-id'),
    auditTraceId: get('x-audit-trace-id'),
    routePolicy: get('x-route-policy'),
    dataResidency: get('x-data-residency'),
  });
}

function attachSovereignty(data, headers) {
  if (data !== null && (typeof data === 'object' || typeof data === 'function') && Object.isExtensible(data)) {
    Object.defineProperty(data, 'sovereignty', {
      value: sovereigntyFromHeaders(headers),
      enumerable: false,
      configurable: true,
      writable: true,
    });
  }
  return data;
}

/** A gateway root or …/v1 as the SDK's base URL (…/v1). */
export function normalizeBaseURL(url) {
  const u = String(url).replace(/\/+$/, '');
  return /\/v1$/.test(u) ? u : `${u}/v1`;
}

/** PEM text from a path or PEM content (string or bytes). */
function pem(value) {
  if (value == null) return undefined;
  if (typeof value !== 'string') return Buffer.from(value);
  return value.includes('-----BEGIN') ? value : readFileSync(value);
}

function errorCodes(err) {
  const codes = [];
  for (let e = err, i = 0; e && i < 6; e = e.cause, i++) {
    if (e.code) codes.push(String(e.code));
    if (Array.isArray(e.errors)) for (const x of e.errors) if (x?.code) codes.push(String(x.code));
  }
  return codes;
}

/** Certificate and handshake failures: retrying cannot help. */
function isTlsError(err) {
  return errorCodes(err).some((c) =>
    /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS|ERR_SSL|HOSTNAME|ALTNAME/.test(c),
  ) || /certificate|SSL routines|handshake/i.test(String(err?.cause?.message ?? ''));
}

/** Failures before a byte of the request left: safe to retry whatever the call. */
function isBeforeSend(err) {
  return errorCodes(err).some((c) =>
    ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'].includes(c),
  );
}

function isAbort(err) {
  return err?.name === 'AbortError' || errorCodes(err).includes('ABORT_ERR');
}

/**
 * undici's own fetch (used for the TLS options) does not recognise the global FormData of
 * Node's bundled undici: send such a form as the bytes the global Response encodes it to.
 */
async function encodeForm(init) {
  const encoded = new Response(init.body);
  const headers = new Headers(init.headers);
  headers.set('content-type', encoded.headers.get('content-type'));
  return { ...init, headers, body: Buffer.from(await encoded.arrayBuffer()) };
}

function makeFetch(base, dispatcher) {
  const wrapped = async (url, init = {}) => {
    let { [STATE]: state, ...rest } = init;
    if (dispatcher) rest.dispatcher = dispatcher;
    if (base === undiciFetch && rest.body instanceof FormData) rest = await encodeForm(rest);
    try {
      const res = await base(url, rest);
      if (state) responseState.set(res, state);
      return res;
    } catch (e) {
      if (state) state.lastError = e;
      throw e;
    }
  };
  wrapped[WRAPPED] = { base, dispatcher };
  return wrapped;
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** How long a retry waits: `retry-after-ms`, `Retry-After`, `X-RateLimit-Reset`; null when none. */
function waitFromHeaders(headers) {
  if (!headers) return null;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.get('retry-after-ms') && Number.isFinite(ms)) return Math.max(0, ms);
  const after = Errors.retryAfterSeconds(headers);
  if (after !== null) return after * 1000;
  const reset = Errors.rateLimitReset(headers);
  if (reset) return Math.max(0, reset.getTime() - Date.now());
  return null;
}

/**
 * The OpenAI client for a Sovereign Gateway. Everything the `openai` SDK offers keeps working
 * (`client.chat.completions.create()`, `client.embeddings.create()`, `client.models.list()`);
 * answers carry `sovereignty`, errors are SPEC.md's typed kinds, and the gateway's own APIs
 * are next to the SDK's resources.
 */
export class Sovereign extends OpenAI {
  /**
   * @param {object} [options]
   * @param {string} [options.baseURL] gateway root or …/v1 (env SOVEREIGN_BASE_URL)
   * @param {string} [options.apiKey] `sk-sov-…` (env SOVEREIGN_API_KEY); optional with a client certificate
   * @param {string|Buffer} [options.caBundle] CA bundle to trust (path or PEM)
   * @param {string|Buffer} [options.clientCert] client certificate for mutual TLS (path or PEM)
   * @param {string|Buffer} [options.clientKey] its private key (path or PEM)
   * @param {number} [options.maxRetries=2] retries of 429, 502/503/504 and connection errors; 0 disables
   */
  constructor(options = {}) {
    const {
      baseURL = process.env.SOVEREIGN_BASE_URL,
      apiKey = process.env.SOVEREIGN_API_KEY,
      caBundle,
      clientCert,
      clientKey,
      fetch: userFetch,
      defaultHeaders,
      ...rest
    } = options;
    if (!baseURL) {
      throw new OpenAI.OpenAIError('Missing baseURL: pass `baseURL` (the gateway root or …/v1) or set SOVEREIGN_BASE_URL.');
    }
    let certOnly = false;
    if (!apiKey) {
      if (!clientCert) {
        throw new OpenAI.OpenAIError(
          "The gateway's API key is missing: pass `apiKey` or set SOVEREIGN_API_KEY (the OPENAI_* " +
            'variables are never read), or pass a `clientCert` mapped to an identity for mutual TLS.',
        );
      }
      certOnly = true;
    }
    let base = userFetch;
    let dispatcher;
    if (base && base[WRAPPED]) ({ base, dispatcher } = base[WRAPPED]);
    if ((caBundle || clientCert || clientKey) && !dispatcher) {
      dispatcher = new Agent({ connect: { ca: pem(caBundle), cert: pem(clientCert), key: pem(clientKey) } });
      base = base ?? undiciFetch;
    }
    base = base ?? globalThis.fetch;
    super({
      // Only the gateway's own settings: what the SDK would take from OPENAI_ADMIN_KEY,
      // OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_WEBHOOK_SECRET when left undefined (a null is
      // not replaced); arguments still win.
      adminAPIKey: null,
      organization: null,
      project: null,
      webhookSecret: null,
      ...rest,
      baseURL: normalizeBaseURL(baseURL),
      // The SDK wants a key; with a certificate alone no Authorization header is sent.
      apiKey: certOnly ? 'mtls-client-certificate' : apiKey,
      defaultHeaders: certOnly ? { ...defaultHeaders, Authorization: null } : defaultHeaders,
      fetch: makeFetch(base, dispatcher),
      caBundle,
      clientCert,
      clientKey,
    });
    // The SDK merges OPENAI_CUSTOM_HEADERS (which may hold an Authorization) into its options'
    // headers: keep only the ones given here.
    this._options = { ...this._options, defaultHeaders: certOnly ? { ...defaultHeaders, Authorization: null } : defaultHeaders };
    this.documents = new Documents(this);
    this.rag = new Rag(this);
    this.activity = new Activity(this);
    this.journal = new Journal(this);
    this.admin = new Admin(this);
  }

  /** Every answer's parsed body (and a stream, before its first chunk) carries `sovereignty`. */
  request(options, remainingRetries = null) {
    const prepared = Promise.resolve(options).then((o) => ({
      ...o,
      fetchOptions: {
        ...o.fetchOptions,
        [STATE]: { nonIdempotent: Boolean(o[NON_IDEMPOTENT]), lastError: null },
      },
    }));
    return super
      .request(prepared, remainingRetries)
      ._thenUnwrap((data, props) => attachSovereignty(data, props.response.headers));
  }

  /** SPEC.md's error kinds, as subclasses of the SDK's. */
  makeStatusError(status, error, message, headers) {
    return makeSovereignError(status, error, message, headers);
  }

  /** SPEC.md: 429 (not a budget) and 502/503/504; non-idempotent calls only on 429. */
  async shouldRetry(response) {
    if (response.headers.get('x-should-retry') === 'false') return false;
    const state = responseState.get(response);
    if (response.status === 429) {
      try {
        const body = await response.clone().json();
        const e = body?.error;
        if (e?.type === 'insufficient_quota' || e?.code === 'insufficient_quota') return false;
        if (e?.type === 'guardrail_violation') return false;
      } catch {
        // not JSON: a plain rate limit
      }
      return true;
    }
    if (state?.nonIdempotent) return false;
    return response.status === 502 || response.status === 503 || response.status === 504;
  }

  /** Waits as the answer asks (`Retry-After`, `X-RateLimit-Reset`) or backs off, capped at 60 s. */
  async retryRequest(options, retriesRemaining, requestLogID, responseHeaders) {
    const state = options.fetchOptions?.[STATE];
    if (!responseHeaders && state?.lastError) {
      const err = state.lastError;
      // A certificate will not change by waiting; a sent non-idempotent call is not repeated.
      if (isTlsError(err) || (state.nonIdempotent && !isBeforeSend(err))) {
        if (isAbort(err)) throw new Errors.APIConnectionTimeoutError();
        throw new Errors.APIConnectionError({ message: `Connection error: ${err?.cause?.message ?? err?.message}`, cause: err });
      }
    }
    let wait = waitFromHeaders(responseHeaders);
    if (wait === null) {
      const maxRetries = options.maxRetries ?? this.maxRetries;
      const attempt = maxRetries - retriesRemaining;
      const cap = Math.min(0.5 * 2 ** attempt, 8) * 1000;
      wait = cap / 2 + Math.random() * (cap / 2); // exponential, with jitter in the upper half
    }
    await sleep(Math.min(wait, MAX_WAIT_MS));
    if (state) state.lastError = null;
    return this.makeRequest(options, retriesRemaining - 1, requestLogID);
  }
}

export default Sovereign;

class Resource {
  constructor(client) {
    this._client = client;
  }
}

const enc = encodeURIComponent;

/**
 * The name sent for bytes that came without one: no extension, so it claims no type and the
 * gateway goes by the content (docs/DOCUMENTS.md); `upload.bin` made it refuse text (415).
 */
export const UNNAMED_UPLOAD = 'upload';

/** The file to upload as a Blob/File with its name. */
async function toUploadFile(file, filename) {
  if (typeof file === 'string') {
    const bytes = readFileSync(file);
    return new File([bytes], filename ?? basename(file), { type: mediaType(filename ?? file) });
  }
  if (typeof File !== 'undefined' && file instanceof File && !filename) return file;
  if (file instanceof Blob) {
    const name = filename ?? file.name ?? UNNAMED_UPLOAD;
    return new File([file], name, { type: file.type || mediaType(name) });
  }
  if (file instanceof ArrayBuffer || ArrayBuffer.isView(file)) {
    const name = filename ?? UNNAMED_UPLOAD;
    return new File([file], name, { type: mediaType(name) });
  }
  if (file && typeof file[Symbol.asyncIterator] === 'function') {
    const chunks = [];
    for await (const c of file) chunks.push(typeof c === 'string' ? Buffer.from(c) : c);
    const name = filename ?? (typeof file.path === 'string' ? basename(file.path) : UNNAMED_UPLOAD);
    return new File(chunks, name, { type: mediaType(name) });
  }
  throw new TypeError('documents.upload: `file` must be a path, a Blob/File, bytes, or a readable stream');
}

function mediaType(name) {
  const ext = String(name).toLowerCase().split('.').pop();
  return (
    {
      pdf: 'application/pdf',
      txt: 'text/plain',
      md: 'text/markdown',
      html: 'text/html',
      htm: 'text/html',
      json: 'application/json',
      csv: 'text/csv',
      docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    }[ext] ?? 'application/octet-stream'
  );
}

/** `client.documents`: the team's document library (docs/DOCUMENTS.md). */
export class Documents extends Resource {
  /**
   * Uploads a document (multipart `file`, `collection`, `metadata`). Not retried once sent.
   * @param file a path, a Blob/File, bytes, or a readable stream
   */
  async upload(file, params = {}, options = {}) {
    const { collection, metadata, filename, wait = true } = params;
    const form = new FormData();
    form.append('file', await toUploadFile(file, filename));
    if (collection != null) form.append('collection', collection);
    if (metadata != null) form.append('metadata', typeof metadata === 'string' ? metadata : JSON.stringify(metadata));
    // Waits until the document is searchable (`?wait=true`, at most 300 s on the gateway) unless
    // `wait: false`, which answers at once with the document `in_progress` (poll `retrieve`).
    return this._client.post('/documents/upload', {
      body: form,
      query: { wait: wait ? 'true' : 'false' },
      ...options,
      [NON_IDEMPOTENT]: true,
    });
  }

  /** `{object: "list", data, …}`; query `collection`, `limit`, `after`. */
  list(query = {}, options = {}) {
    return this._client.get('/documents', { query, ...options });
  }

  retrieve(id, options = {}) {
    return this._client.get(`/documents/${enc(id)}`, options);
  }

  /** Alias of retrieve. */
  get(id, options = {}) {
    return this.retrieve(id, options);
  }

  delete(id, options = {}) {
    return this._client.delete(`/documents/${enc(id)}`, options);
  }
}

/** `client.rag`: retrieval (with citations and confidence) and optionally a generated answer. */
export class Rag extends Resource {
  query(body, options = {}) {
    return this._client.post('/rag/query', { body, ...options });
  }
}

/**
 * A page of activity entries that is also a promise of itself and an async iterator over the
 * entries of this page and every later one.
 */
class ActivityQuery {
  constructor(activity, params, options) {
    this._activity = activity;
    this._params = params;
    this._options = options;
    this._first = null;
  }

  _firstPage() {
    this._first ??= this._activity._page(this._params, this._options);
    return this._first;
  }

  then(onFulfilled, onRejected) {
    return this._firstPage().then(onFulfilled, onRejected);
  }

  catch(onRejected) {
    return this._firstPage().catch(onRejected);
  }

  finally(f) {
    return this._firstPage().finally(f);
  }

  /** Every page, following `next_cursor`. */
  async *pages() {
    let page = await this._firstPage();
    for (;;) {
      yield page;
      if (!page.next_cursor) return;
      page = await this._activity._page({ ...this._params, cursor: page.next_cursor }, this._options);
    }
  }

  async *[Symbol.asyncIterator]() {
    for await (const page of this.pages()) yield* page.data;
  }
}

/** `client.activity`: the activity journal's read API (auditor: own team; admin: all). */
export class Activity extends Resource {
  async _page(params, options) {
    return this._client.post('/activity/logs', { body: { ...params, format: 'json' }, ...options });
  }

  /**
   * One page (`await`) or all entries (`for await`): filters `from`, `to`, `actor_id`,
   * `team_id`, `model`, `status`, `action`, `request_id`, `replica`, `limit`, `cursor`.
   */
  query(params = {}, options = {}) {
    return new ActivityQuery(this, params, options);
  }

  /** The `jsonl` (default) or `csv` export, as text; jsonl lines are as the chain holds them. */
  async export(params = {}, options = {}) {
    const { format = 'jsonl', ...filters } = params;
    if (format !== 'jsonl' && format !== 'csv') throw new TypeError('activity.export: format must be jsonl or csv');
    const response = await this._client
      .post('/activity/logs', { body: { ...filters, format }, ...options, __binaryResponse: true })
      .asResponse();
    return response.text();
  }

  /** A text/plain answer as its text. */
  async _text(path, query, options) {
    const response = await this._client
      .get(path, {
        ...(query ? { query } : {}),
        ...options,
        headers: { Accept: 'text/plain, */*', ...options.headers },
        __binaryResponse: true,
      })
      .asResponse();
    return response.text();
  }

  /**
   * The journal's signed checkpoint as it stands (a C2SP tlog-checkpoint note, text):
   * verify it with `verifyCheckpoint(note, vkey)`. `replica`: another replica's log.
   */
  checkpoint(params = {}, options = {}) {
    const { replica } = params;
    return this._text('/activity/checkpoint', replica != null ? { replica } : null, options);
  }

  /** The verifier key of the checkpoints, `<name>+<key id>+<base64 key>` (without the newline). */
  async checkpointKey(options = {}) {
    return (await this._text('/activity/checkpoint/key', null, options)).replace(/\r?\n$/, '');
  }

  /**
   * `{leaf_index, tree_size, hashes}`: the inclusion proof of request `requestId`'s entry in
   * the tree of `treeSize` leaves (default: the latest checkpoint's size).
   */
  inclusionProof(requestId, params = {}, options = {}) {
    const { treeSize } = params;
    const query = { request_id: requestId };
    if (treeSize != null) query.tree_size = treeSize;
    return this._client.get('/activity/proof', { query, ...options });
  }

  /** `{from, to, hashes}`: the consistency proof between the trees of `from` and `to` leaves. */
  consistencyProof(from, to, options = {}) {
    return this._client.get('/activity/consistency', { query: { from, to }, ...options });
  }
}

/** `client.journal`: server-side verification and signed checkpoints (admin). */
export class Journal extends Resource {
  verify(options = {}) {
    return this._client.get('/admin/journal/verify', options);
  }

  /** Signs the chain's durable head now: 201 with the signed checkpoint. */
  createCheckpoint(options = {}) {
    return this._client.post('/admin/journal/checkpoints', { ...options, [NON_IDEMPOTENT]: true });
  }

  /** `{object: "list", data: [signed checkpoints]}`. */
  listCheckpoints(options = {}) {
    return this._client.get('/admin/journal/checkpoints', options);
  }
}

export class Teams extends Resource {
  list(options = {}) {
    return this._client.get('/admin/teams', options);
  }
  create(body, options = {}) {
    return this._client.post('/admin/teams', { body, ...options, [NON_IDEMPOTENT]: true });
  }
  retrieve(id, options = {}) {
    return this._client.get(`/admin/teams/${enc(id)}`, options);
  }
  update(id, body, options = {}) {
    return this._client.patch(`/admin/teams/${enc(id)}`, { body, ...options });
  }
  delete(id, options = {}) {
    return this._client.delete(`/admin/teams/${enc(id)}`, options);
  }
}

export class Keys extends Resource {
  /** Query `team_id`. */
  list(query = {}, options = {}) {
    return this._client.get('/admin/keys', { query, ...options });
  }
  /** The answer holds the secret (`key`), this once. */
  create(body, options = {}) {
    return this._client.post('/admin/keys', { body, ...options, [NON_IDEMPOTENT]: true });
  }
  retrieve(id, options = {}) {
    return this._client.get(`/admin/keys/${enc(id)}`, options);
  }
  /** A new secret (`key`, this once); the old one keeps working for `grace_seconds`. */
  rotate(id, body = {}, options = {}) {
    return this._client.post(`/admin/keys/${enc(id)}/rotate`, { body, ...options, [NON_IDEMPOTENT]: true });
  }
  revoke(id, options = {}) {
    return this._client.post(`/admin/keys/${enc(id)}/revoke`, { ...options, [NON_IDEMPOTENT]: true });
  }
}

export class Usage extends Resource {
  /** Query `team_id`, `key_id`, `model`, `from`, `to`. */
  get(query = {}, options = {}) {
    return this._client.get('/admin/usage', { query, ...options });
  }
}

export class Policies extends Resource {
  list(options = {}) {
    return this._client.get('/admin/policies', options);
  }
  /** `{document?, component_base64?, pool?, activate?}`; a `document` alone reuses the active component. */
  upload(body, options = {}) {
    return this._client.post('/admin/policies', { body, ...options, [NON_IDEMPOTENT]: true });
  }
  /** Makes a loaded version active (a rollback is activating an older id). */
  activate(id, options = {}) {
    return this._client.post(`/admin/policies/${enc(id)}/activate`, options);
  }
}

export class Guardrail extends Resource {
  get(options = {}) {
    return this._client.get('/admin/guardrail', options);
  }
  /** `{component_base64?, settings?}`. */
  set(body, options = {}) {
    return this._client.post('/admin/guardrail', { body, ...options });
  }
}

/** `client.admin`: teams, keys, usage, policies, guardrail (admin keys; usage also auditors), next to the SDK's `admin.organization`. */
export class Admin extends OpenAI.Admin {
  constructor(client) {
    super(client); // keeps the SDK's own `admin.organization`
    this.teams = new Teams(client);
    this.keys = new Keys(client);
    this.usage = new Usage(client);
    this.policies = new Policies(client);
    this.guardrail = new Guardrail(client);
  }
}
