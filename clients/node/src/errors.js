// Typed errors (clients/SPEC.md, "Errors"): each is a subclass of the `openai` SDK's matching
// class, so existing `catch (e) { if (e instanceof OpenAI.APIError) … }` code keeps working, and
// each carries the answer's `X-Audit-Trace-ID` / `X-Sovereign-ID`.
import OpenAI from './openai.js';

const {
  APIError,
  APIConnectionError,
  APIConnectionTimeoutError,
  APIUserAbortError,
} = OpenAI;

/** Adds the sovereign fields every status error carries. */
function decorate(err, headers) {
  const get = (name) => (headers && typeof headers.get === 'function' ? headers.get(name) : null) ?? null;
  Object.defineProperty(err, 'auditTraceId', { value: get('x-audit-trace-id'), enumerable: true });
  Object.defineProperty(err, 'sovereignId', { value: get('x-sovereign-id'), enumerable: true });
  err.name = err.constructor.name;
}

export class BadRequestError extends OpenAI.BadRequestError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

/** A guardrail refused the request (400 `guardrail_violation`, e.g. code `pii_detected`). Never retried. */
export class GuardrailViolationError extends BadRequestError {}

export class AuthenticationError extends OpenAI.AuthenticationError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

export class PermissionDeniedError extends OpenAI.PermissionDeniedError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

export class NotFoundError extends OpenAI.NotFoundError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

export class ConflictError extends OpenAI.ConflictError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

export class PayloadTooLargeError extends APIError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

export class UnprocessableEntityError extends OpenAI.UnprocessableEntityError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

/** 451 `sovereignty_error`: the request may not leave its residency boundary (e.g. `sensitive_requires_local`). */
export class DataResidencyError extends APIError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}
export { DataResidencyError as ResidencyError };

/** Seconds to wait, from `Retry-After` (seconds or an HTTP date); null when absent. */
export function retryAfterSeconds(headers, now = Date.now()) {
  const raw = headers?.get?.('retry-after');
  if (!raw) return null;
  const n = Number(raw);
  if (Number.isFinite(n)) return Math.max(0, n);
  const t = Date.parse(raw);
  return Number.isNaN(t) ? null : Math.max(0, (t - now) / 1000);
}

/** `X-RateLimit-Reset` (Unix seconds) as a Date; null when absent. */
export function rateLimitReset(headers) {
  const raw = headers?.get?.('x-ratelimit-reset');
  if (!raw) return null;
  const n = Number(raw);
  return Number.isFinite(n) ? new Date(n * 1000) : null;
}

/** 429: `retryAfter` (seconds) and `reset` (Date) when the gateway sent them. */
export class RateLimitError extends OpenAI.RateLimitError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
    this.retryAfter = retryAfterSeconds(headers);
    this.reset = rateLimitReset(headers);
  }
}

/** 429 `insufficient_quota`: a budget is spent. Never retried. A `RateLimitError`, as in every language. */
export class BudgetExceededError extends RateLimitError {}

export class InternalServerError extends OpenAI.InternalServerError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

/** 503. */
export class ServiceUnavailableError extends InternalServerError {}

/** Any other non-2xx status. */
export class SovereignAPIError extends APIError {
  constructor(status, error, message, headers) {
    super(status, error, message, headers);
    decorate(this, headers);
  }
}

/** A webhook's signature or timestamp did not verify. */
export class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError };

/**
 * The typed error for an answer: the status picks the kind, then the gateway's `type`/`code`
 * refine it within that status (SPEC.md, "Errors"; tests/vectors/errors.json). `body` is the
 * parsed JSON body (or undefined), `message` the raw text when the body was not JSON.
 */
export function makeSovereignError(status, body, message, headers) {
  const error = body && typeof body === 'object' ? body.error : undefined;
  const type = error?.type;
  const code = error?.code;
  let Kind;
  if (status === 400) Kind = type === 'guardrail_violation' ? GuardrailViolationError : BadRequestError;
  else if (status === 451) Kind = DataResidencyError;
  else if (status === 429 && (type === 'insufficient_quota' || code === 'insufficient_quota')) Kind = BudgetExceededError;
  else if (status === 429) Kind = RateLimitError;
  else if (status === 401) Kind = AuthenticationError;
  else if (status === 403) Kind = PermissionDeniedError;
  else if (status === 404) Kind = NotFoundError;
  else if (status === 409) Kind = ConflictError;
  else if (status === 413) Kind = PayloadTooLargeError;
  else if (status === 422) Kind = UnprocessableEntityError;
  else if (status === 503) Kind = ServiceUnavailableError;
  else if (status >= 500) Kind = InternalServerError;
  else Kind = SovereignAPIError;
  return new Kind(status, error, message, headers);
}
