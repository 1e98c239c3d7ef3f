// Type declarations for @sovereign-gateway/client (hand-written; src/index.js is the code).
import OpenAI, { APIPromise, APIError, type ClientOptions } from 'openai';
import type { Stream } from 'openai/streaming';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions';
import type { CreateEmbeddingResponse, EmbeddingCreateParams } from 'openai/resources/embeddings';

export { APIPromise };
/** The SDK's per-request options (headers, timeout, maxRetries, signal, …). */
export type RequestOptions = NonNullable<Parameters<OpenAI['models']['retrieve']>[1]>;

// ----- sovereignty metadata ---------------------------------------------------------------

/** The gateway's sovereignty headers of one answer. */
export interface Sovereignty {
  /** `X-Sovereign-ID`: the gateway replica that answered. */
  readonly sovereignId: string | null;
  /** `X-Audit-Trace-ID`: the request's id in the activity journal. */
  readonly auditTraceId: string | null;
  /** `X-Route-Policy`: the routing policy that chose the model (inference only). */
  readonly routePolicy: string | null;
  /** `X-Data-Residency`: the region that served (inference only). */
  readonly dataResidency: string | null;
}

export interface WithSovereignty {
  /** Available on a completion, an embedding, every gateway answer, and a stream before its first chunk. */
  readonly sovereignty: Sovereignty;
}

export declare function sovereigntyFromHeaders(headers: Headers): Sovereignty;

export type RoutingProfile = 'cost' | 'performance' | 'balanced';

/** The gateway's routing hints (the upstream never sees them). */
export interface RoutingHints {
  routing?: {
    profile?: RoutingProfile | null;
    /** Data classification, e.g. `sensitive` (the `X-Data-Classification` header wins). */
    classification?: string | null;
    [key: string]: unknown;
  } | null;
  routing_preference?: RoutingProfile | null;
}

// ----- the client ---------------------------------------------------------------------------

export interface SovereignOptions extends Omit<ClientOptions, 'apiKey' | 'baseURL'> {
  /** The gateway root or …/v1 (default: env SOVEREIGN_BASE_URL). */
  baseURL?: string;
  /** An `sk-sov-…` key (default: env SOVEREIGN_API_KEY); optional with a client certificate. */
  apiKey?: string;
  /** A CA bundle to trust: a path or PEM content. */
  caBundle?: string | Buffer;
  /** A client certificate for mutual TLS: a path or PEM content. */
  clientCert?: string | Buffer;
  /** The client certificate's private key: a path or PEM content. */
  clientKey?: string | Buffer;
}

export interface SovereignChatCompletions {
  create(
    body: ChatCompletionCreateParamsNonStreaming & RoutingHints,
    options?: RequestOptions,
  ): APIPromise<ChatCompletion & WithSovereignty>;
  create(
    body: ChatCompletionCreateParamsStreaming & RoutingHints,
    options?: RequestOptions,
  ): APIPromise<Stream<ChatCompletionChunk> & WithSovereignty>;
  create(
    body: ChatCompletionCreateParamsBase & RoutingHints,
    options?: RequestOptions,
  ): APIPromise<(Stream<ChatCompletionChunk> | ChatCompletion) & WithSovereignty>;
}

export type SovereignChat = { completions: SovereignChatCompletions & OpenAI.Chat.Completions } & OpenAI.Chat;

export interface SovereignEmbeddings {
  create(
    body: EmbeddingCreateParams & RoutingHints,
    options?: RequestOptions,
  ): APIPromise<CreateEmbeddingResponse & WithSovereignty>;
}

export declare const NON_IDEMPOTENT: unique symbol;
/** The file name sent for bytes given without one: `upload`, no extension. */
export declare const UNNAMED_UPLOAD: 'upload';

/** Every `x-sovereign-client` operationId -> the method paths implementing it (e.g. `admin.keys.rotate`). */
export declare const OPERATIONS: Readonly<Record<string, readonly string[]>>;

export declare function normalizeBaseURL(url: string): string;

export declare class Sovereign extends OpenAI {
  constructor(options?: SovereignOptions);
  chat: SovereignChat;
  embeddings: SovereignEmbeddings & OpenAI.Embeddings;
  documents: Documents;
  rag: Rag;
  activity: Activity;
  journal: Journal;
  admin: Admin;
}
export default Sovereign;

// ----- gateway resources --------------------------------------------------------------------

export interface List<T> {
  object: 'list';
  data: T[];
  [key: string]: unknown;
}

export type Answer<T> = APIPromise<T & WithSovereignty>;

export interface Document {
  id: string;
  object: 'document';
  filename: string;
  collection: string;
  kind: string;
  bytes: number;
  sha256: string;
  pages: number | null;
  chunks: number;
  status: string;
  metadata: Record<string, unknown>;
  model: string;
  created_at: number;
  [key: string]: unknown;
}

export interface Deleted {
  id: string;
  object: string;
  deleted: boolean;
}

export interface DocumentUploadParams {
  collection?: string;
  metadata?: Record<string, unknown> | string;
  /**
   * The name to send (default: the path's base name, the File's name, or `UNNAMED_UPLOAD`,
   * `upload`: no extension, so the gateway goes by the bytes).
   */
  filename?: string;
  /**
   * Wait until the document is searchable (default `true`: `?wait=true`, at most 300 s on the
   * gateway); `false` answers at once with the document `in_progress` (poll `retrieve`).
   */
  wait?: boolean;
}

export type Uploadable =
  | string
  | Blob
  | File
  | ArrayBuffer
  | ArrayBufferView
  | AsyncIterable<Uint8Array | string>;

export declare class Documents {
  /** Multipart upload (`file`, `collection`, `metadata`); not retried once sent. */
  upload(file: Uploadable, params?: DocumentUploadParams, options?: RequestOptions): Answer<Document>;
  list(
    query?: { collection?: string; limit?: number; after?: string },
    options?: RequestOptions,
  ): Answer<List<Document> & { has_more?: boolean }>;
  retrieve(id: string, options?: RequestOptions): Answer<Document>;
  get(id: string, options?: RequestOptions): Answer<Document>;
  delete(id: string, options?: RequestOptions): Answer<Deleted>;
}

export interface Citation {
  document_id: string;
  filename: string;
  page: number | null;
  paragraph: number | null;
  chunk_id: string;
  text: string;
  score: number;
  confidence: number;
}

export interface RagQueryParams {
  query: string;
  collection?: string;
  top_k?: number;
  filters?: Record<string, unknown>;
  min_confidence?: number;
  /** Generate an answer from the citations with this model (else retrieval only). */
  model?: string;
  max_tokens?: number;
  temperature?: number;
  user?: string;
  [key: string]: unknown;
}

export interface RagResult {
  object: 'rag.result';
  query: string;
  collection: string | null;
  model: string;
  confidence: number;
  citations: Citation[];
  answer?: string | null;
  answer_skipped?: string;
  [key: string]: unknown;
}

export declare class Rag {
  query(body: RagQueryParams, options?: RequestOptions): Answer<RagResult>;
}

export interface ActivityFilters {
  from?: string;
  to?: string;
  actor_id?: string;
  team_id?: string;
  model?: string;
  status?: 'success' | 'blocked' | 'rejected' | 'error';
  action?: string;
  request_id?: string;
  replica?: string;
  limit?: number;
  cursor?: string;
}

/** What a request was charged: one element of an entry's `charges` (docs/JOURNAL.md). */
export interface JournalCharge {
  /** The model whose prices applied. */
  model: string;
  /** The spend in integer micro-units of the configured currency (`[budgets] currency`). */
  spend_micros: number;
  tokens_in: number;
  tokens_out: number;
}

/** One journal entry (docs/JOURNAL.md, "Entries"). */
export interface ActivityEntry {
  seq: number;
  prev_hash: string;
  timestamp: string;
  request_id: string;
  actor_id: string;
  team_id: string;
  key_id: string;
  auth?: string;
  cert_sha256?: string;
  /** Present only when the entry carries the request's charges (their durable record). */
  charges?: JournalCharge[];
  action: string;
  model: string | null;
  prompt_hash: string | null;
  routing_policy: string | null;
  residency_boundary: string | null;
  status: 'success' | 'blocked' | 'rejected' | 'error';
  prompt_tokens: number | null;
  completion_tokens: number | null;
  latency_us: number;
  journal_hash: string;
  /** Added by the json format: the chain's sovereign id. */
  replica?: string;
  [key: string]: unknown;
}

export interface ActivityPage extends WithSovereignty {
  object: 'list';
  data: ActivityEntry[];
  next_cursor: string | null;
}

/** Awaitable (the first page) and async-iterable (every entry of every page). */
export interface ActivityQuery extends PromiseLike<ActivityPage>, AsyncIterable<ActivityEntry> {
  catch<R = never>(onRejected?: (reason: unknown) => R | PromiseLike<R>): Promise<ActivityPage | R>;
  finally(onFinally?: () => void): Promise<ActivityPage>;
  pages(): AsyncGenerator<ActivityPage, void, undefined>;
}

/** GET /v1/activity/proof: the RFC 9162 inclusion proof of one entry (hashes base64). */
export interface InclusionProof {
  leaf_index: number;
  tree_size: number;
  hashes: string[];
}

/** GET /v1/activity/consistency: the RFC 9162 consistency proof between two tree sizes (hashes base64). */
export interface ConsistencyProof {
  from: number;
  to: number;
  hashes: string[];
}

export declare class Activity {
  query(params?: ActivityFilters, options?: RequestOptions): ActivityQuery;
  /** The `jsonl` (default) or `csv` export as text. */
  export(params?: ActivityFilters & { format?: 'jsonl' | 'csv' }, options?: RequestOptions): Promise<string>;
  /** The journal's signed checkpoint (C2SP tlog-checkpoint note) as text; `replica` on multi-replica deployments. */
  checkpoint(params?: { replica?: string }, options?: RequestOptions): Promise<string>;
  /** The checkpoints' verifier key, `<name>+<key id>+<base64 key>` (no trailing newline). */
  checkpointKey(options?: RequestOptions): Promise<string>;
  /** The inclusion proof of a request's entry (tree size: the latest checkpoint's, unless given). */
  inclusionProof(requestId: string, params?: { treeSize?: number }, options?: RequestOptions): Answer<InclusionProof>;
  /** The consistency proof between the trees of `from` and `to` leaves (1 <= from <= to). */
  consistencyProof(from: number, to: number, options?: RequestOptions): Answer<ConsistencyProof>;
}

export interface SignedCheckpoint {
  count: number;
  head_hash: string;
  public_key: string;
  seq: number;
  signature: string;
  sovereign_id: string;
  timestamp: string;
  [key: string]: unknown;
}

export interface JournalVerifyReport {
  ok: boolean;
  [key: string]: unknown;
}

export declare class Journal {
  verify(options?: RequestOptions): Answer<JournalVerifyReport>;
  createCheckpoint(options?: RequestOptions): Answer<SignedCheckpoint>;
  listCheckpoints(options?: RequestOptions): Answer<List<SignedCheckpoint>>;
}

export interface Team {
  id: string;
  object: 'team';
  name: string;
  [key: string]: unknown;
}

export interface TeamCreateParams {
  name: string;
  plan?: 'development' | 'professional' | 'enterprise';
  budget?: number | null;
  token_cap_per_day?: number | null;
  allowed_regions?: string[];
  sensitive_only?: boolean;
  allowed_models?: string[];
}

export interface ApiKey {
  id: string;
  object: string;
  team_id: string;
  role: 'admin' | 'member' | 'auditor';
  /** The secret: only in create and rotate answers. */
  key?: string;
  [key: string]: unknown;
}

export interface KeyCreateParams {
  team_id: string;
  role: 'admin' | 'member' | 'auditor';
  name?: string;
  expires_at?: string | number | null;
  ip_allowlist?: string[];
  rpm?: number;
  tpd?: number;
  budget?: number;
}

export declare class Teams {
  list(options?: RequestOptions): Answer<List<Team>>;
  create(body: TeamCreateParams, options?: RequestOptions): Answer<Team>;
  retrieve(id: string, options?: RequestOptions): Answer<Team>;
  update(id: string, body: Partial<TeamCreateParams>, options?: RequestOptions): Answer<Team>;
  delete(id: string, options?: RequestOptions): Answer<Deleted>;
}

export declare class Keys {
  list(query?: { team_id?: string }, options?: RequestOptions): Answer<List<ApiKey>>;
  create(body: KeyCreateParams, options?: RequestOptions): Answer<ApiKey & { key: string }>;
  retrieve(id: string, options?: RequestOptions): Answer<ApiKey>;
  rotate(id: string, body?: { grace_seconds?: number }, options?: RequestOptions): Answer<ApiKey & { key: string }>;
  revoke(id: string, options?: RequestOptions): Answer<ApiKey>;
}

export interface UsageRow {
  team_id: string;
  key_id: string;
  model: string;
  actor_id: string | null;
  requests: number;
  tokens_in: number;
  tokens_out: number;
  spend: number;
}

export interface UsageReport extends List<UsageRow> {
  currency: string;
  total: { requests: number; tokens_in: number; tokens_out: number; spend: number };
}

export declare class Usage {
  get(
    query?: { team_id?: string; key_id?: string; model?: string; from?: string; to?: string },
    options?: RequestOptions,
  ): Answer<UsageReport>;
}

export interface PolicyVersion {
  id: string;
  kind: string;
  name: string | null;
  status: 'active' | 'inactive' | 'failed';
  active: boolean;
  pool: 'fresh' | 'warm';
  origin: string;
  created: number;
  [key: string]: unknown;
}

export interface PolicyUploadParams {
  /** A routing YAML document; alone, it reuses the active component. */
  document?: string;
  component_base64?: string;
  pool?: 'fresh' | 'warm';
  activate?: boolean;
}

export declare class Policies {
  list(options?: RequestOptions): Answer<List<PolicyVersion> & { active: string | null }>;
  upload(body: PolicyUploadParams, options?: RequestOptions): Answer<PolicyVersion>;
  activate(id: string, options?: RequestOptions): Answer<PolicyVersion>;
}

export interface GuardrailInfo {
  object: 'guardrail';
  world: string;
  component_sha256: string;
  settings: unknown;
}

export declare class Guardrail {
  get(options?: RequestOptions): Answer<GuardrailInfo>;
  set(body: { component_base64?: string; settings?: string | Record<string, unknown> }, options?: RequestOptions): Answer<GuardrailInfo>;
}

/** The gateway's admin API, next to the SDK's own `admin.organization`. */
export declare class Admin extends OpenAI.Admin {
  teams: Teams;
  keys: Keys;
  usage: Usage;
  policies: Policies;
  guardrail: Guardrail;
}

// ----- errors -------------------------------------------------------------------------------

/** What every typed status error adds to the SDK's (`status`, `type`, `code`, `param`, `message`, `headers`). */
export interface SovereignErrorFields {
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}

type StatusErrorArgs = [status: number, error: object | undefined, message: string | undefined, headers: Headers];

export declare class BadRequestError extends OpenAI.BadRequestError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class GuardrailViolationError extends BadRequestError {}
export declare class AuthenticationError extends OpenAI.AuthenticationError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class PermissionDeniedError extends OpenAI.PermissionDeniedError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class NotFoundError extends OpenAI.NotFoundError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class ConflictError extends OpenAI.ConflictError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class PayloadTooLargeError extends OpenAI.APIError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class UnprocessableEntityError extends OpenAI.UnprocessableEntityError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
/** 451 `sovereignty_error`. */
export declare class DataResidencyError extends OpenAI.APIError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export { DataResidencyError as ResidencyError };
export declare class RateLimitError extends OpenAI.RateLimitError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
  /** Seconds, from `Retry-After`. */
  readonly retryAfter: number | null;
  /** From `X-RateLimit-Reset`. */
  readonly reset: Date | null;
}
/** 429 `insufficient_quota`: a budget is spent (never retried); a `RateLimitError`. */
export declare class BudgetExceededError extends RateLimitError {}
export declare class InternalServerError extends OpenAI.InternalServerError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class ServiceUnavailableError extends InternalServerError {}
export declare class SovereignAPIError extends OpenAI.APIError implements SovereignErrorFields {
  constructor(...args: StatusErrorArgs);
  readonly auditTraceId: string | null;
  readonly sovereignId: string | null;
}
export declare class WebhookVerificationError extends Error {}

export { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError } from 'openai';

export declare function makeSovereignError(
  status: number,
  body: unknown,
  message: string | undefined,
  headers: Headers,
): APIError & SovereignErrorFields;
export declare function retryAfterSeconds(headers: Headers, now?: number): number | null;
export declare function rateLimitReset(headers: Headers): Date | null;

// ----- offline verification -----------------------------------------------------------------

export declare const GENESIS_HASH: string;

/** RFC 8785 (JCS) of a JSON value. */
export declare function canonicalJson(value: unknown): string;

export interface JournalProblem {
  /** 1-based line of the export (null when the problem is a checkpoint naming no exported line). */
  line: number | null;
  seq: number | null;
  /** Starts with malformed, edited, broken link, reordered, bad signature, untrusted key, rewritten or truncated. */
  reason: string;
}

export interface JournalVerification {
  ok: boolean;
  entries: number;
  firstSeq: number | null;
  headSeq: number | null;
  headHash: string | null;
  gaps: number;
  checkpointsChecked: number;
  problem: JournalProblem | null;
}

export interface VerifyJournalOptions {
  /** Signed checkpoints: objects, JSON lines, or the text of a `checkpoints-<id>.jsonl`. */
  checkpoints?: Array<SignedCheckpoint | Record<string, unknown> | string> | string | Buffer;
  /** The operator's key: `ed25519:<64 hex>` (a `<signing_key>.pub`'s content) or 32 raw bytes. */
  publicKey?: string | Uint8Array;
  /** The chain the export is of (default: inferred from the checkpoints). */
  sovereignId?: string;
}

export declare function verifyJournalExport(
  lines: string | Buffer | Uint8Array | string[],
  options?: VerifyJournalOptions,
): JournalVerification;

export type WebhookHeaders =
  | Headers
  | Map<string, string>
  | Record<string, string | string[] | undefined>;

/** Throws WebhookVerificationError; returns the parsed JSON payload (the text when not JSON). */
export declare function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Buffer | Uint8Array,
  options?: { toleranceSeconds?: number; now?: Date | number },
): unknown;

// ----- transparency log (offline) -------------------------------------------------------------

/** A checkpoint, inclusion proof or consistency proof that does not verify. */
export declare class JournalVerificationError extends Error {
  constructor(reason: string);
  /** Starts with `malformed`, `bad signature`, `untrusted key`, `inclusion` or `consistency`. */
  readonly reason: string;
}

/** The most signature lines a checkpoint note may carry. */
export declare const MAX_NOTE_SIGNATURES: number;

/** A checkpoint whose signature verified. */
export interface VerifiedCheckpoint {
  origin: string;
  treeSize: number;
  /** The 32-byte root hash. */
  rootHash: Buffer;
  /** The note's extension lines after the root hash (usually none). */
  extensions: string[];
}

/** A 32-byte hash: bytes, or standard base64. */
export type HashInput = Uint8Array | string;

/** Verifies a signed checkpoint against the verifier key; throws JournalVerificationError. */
export declare function verifyCheckpoint(note: string | Uint8Array, vkey: string | Uint8Array): VerifiedCheckpoint;

/**
 * Verifies that an export line (a trailing "\n" is stripped) is in the tree the checkpoint
 * (of size `proof.tree_size`) vouches for; returns the checkpoint; throws JournalVerificationError.
 */
export declare function verifyInclusion(
  line: string | Uint8Array,
  proof: InclusionProof,
  note: string | Uint8Array,
  vkey: string | Uint8Array,
): VerifiedCheckpoint;

/**
 * Verifies that the newer checkpoint's tree extends the older's; returns both; throws
 * JournalVerificationError.
 */
export declare function verifyConsistency(
  oldNote: string | Uint8Array,
  newNote: string | Uint8Array,
  proof: ConsistencyProof,
  vkey: string | Uint8Array,
): { from: VerifiedCheckpoint; to: VerifiedCheckpoint };

/** RFC 9162 leaf hash, SHA-256(0x00 || leaf); a string leaf is UTF-8. */
export declare function leafHash(leaf: string | Uint8Array): Buffer;

/** The root an inclusion path leads to (RFC 9162 §2.1.3.2); throws JournalVerificationError. */
export declare function rootFromInclusion(leafHash: HashInput, index: number, size: number, hashes: HashInput[]): Buffer;

/** RFC 9162 §2.1.4.2; true, or throws JournalVerificationError. */
export declare function verifyConsistencyProof(
  m: number,
  n: number,
  root1: HashInput,
  root2: HashInput,
  hashes: HashInput[],
): true;
