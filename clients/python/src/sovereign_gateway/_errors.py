"""Typed errors: the gateway's OpenAI-shaped error bodies mapped to subclasses of the openai
SDK's own errors (clients/SPEC.md, "Errors"), so `except openai.APIStatusError` keeps working."""

from __future__ import annotations

import email.utils
import time
from typing import Any, Mapping, Optional

import httpx2
import openai

__all__ = [
    "SovereignStatusError",
    "BadRequestError",
    "GuardrailViolationError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "PayloadTooLargeError",
    "UnprocessableEntityError",
    "DataResidencyError",
    "ResidencyError",
    "BudgetExceededError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIConnectionError",
    "APITimeoutError",
    "WebhookVerificationError",
    "JournalVerificationError",
    "make_status_error",
]

# No answer at all: the SDK's own errors (raised by its transport loop), re-exported.
APIConnectionError = openai.APIConnectionError
APITimeoutError = openai.APITimeoutError


class SovereignStatusError(openai.APIStatusError):
    """An answer with a 4xx/5xx status. Keeps `status`, `type`, `code`, `param`, `message` and
    the answer's `X-Audit-Trace-ID` (`audit_trace_id`) and `X-Sovereign-ID` (`sovereign_id`)."""

    audit_trace_id: Optional[str]
    sovereign_id: Optional[str]

    def __init__(self, message: str, *, response: httpx2.Response, body: object | None) -> None:
        super().__init__(message, response=response, body=body)
        self.audit_trace_id = response.headers.get("x-audit-trace-id")
        self.sovereign_id = response.headers.get("x-sovereign-id")
        if isinstance(body, Mapping) and isinstance(body.get("message"), str):
            self.message = body["message"]

    @property
    def status(self) -> int:
        return self.status_code


class BadRequestError(SovereignStatusError, openai.BadRequestError):
    pass


class GuardrailViolationError(BadRequestError):
    """400 `guardrail_violation`: the guardrail blocked the request (never retried)."""


class AuthenticationError(SovereignStatusError, openai.AuthenticationError):
    pass


class PermissionDeniedError(SovereignStatusError, openai.PermissionDeniedError):
    pass


class NotFoundError(SovereignStatusError, openai.NotFoundError):
    pass


class ConflictError(SovereignStatusError, openai.ConflictError):
    pass


class PayloadTooLargeError(SovereignStatusError):
    pass


class UnprocessableEntityError(SovereignStatusError, openai.UnprocessableEntityError):
    pass


class DataResidencyError(SovereignStatusError):
    """451 `sovereignty_error`: the request may not be served where it would have gone (e.g.
    `sensitive_requires_local`)."""


ResidencyError = DataResidencyError


class RateLimitError(SovereignStatusError, openai.RateLimitError):
    """429 rate limit: `retry_after` (seconds, from `Retry-After`) and `reset` (Unix time, from
    `X-RateLimit-Reset`) when the answer said."""

    retry_after: Optional[float]
    reset: Optional[float]

    def __init__(self, message: str, *, response: httpx2.Response, body: object | None) -> None:
        super().__init__(message, response=response, body=body)
        self.retry_after = parse_retry_after(response.headers)
        self.reset = _float(response.headers.get("x-ratelimit-reset"))


class BudgetExceededError(RateLimitError):
    """429 `insufficient_quota`: a budget is spent; waiting does not help (never retried). A
    `RateLimitError`, as in every language (clients/SPEC.md, "Errors")."""


class InternalServerError(SovereignStatusError, openai.InternalServerError):
    pass


class ServiceUnavailableError(InternalServerError):
    pass


class WebhookVerificationError(openai.InvalidWebhookSignatureError):
    """A webhook whose signature, timestamp or headers do not verify."""


class JournalVerificationError(openai.OpenAIError, ValueError):
    """A transparency-log checkpoint, inclusion proof or consistency proof that does not verify
    offline (clients/SPEC.md, "Transparency log proofs (offline)"). `reason` (also the message)
    starts with `malformed`, `bad signature`, `untrusted key`, `inclusion` or `consistency`."""

    reason: str

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _float(value: Optional[str]) -> Optional[float]:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def parse_retry_after(headers: Mapping[str, str] | httpx2.Headers) -> Optional[float]:
    """`Retry-After` in seconds (a number or an HTTP date), else None."""
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _float(value)
    if seconds is not None:
        return max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _is_quota(data: Mapping[str, Any]) -> bool:
    return "insufficient_quota" in (data.get("type"), data.get("code"))


def make_status_error(err_msg: str, *, body: object, response: httpx2.Response) -> openai.APIStatusError:
    """The typed error for an error answer: the status picks the kind, then the gateway's
    `type`/`code` refine it within that status (SPEC.md, "Errors"; tests/vectors/errors.json)."""
    data: object = body.get("error", body) if isinstance(body, Mapping) else body
    fields: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    status = response.status_code
    cls: type[SovereignStatusError]
    if status == 400:
        cls = GuardrailViolationError if fields.get("type") == "guardrail_violation" else BadRequestError
    elif status == 451:
        cls = DataResidencyError
    elif status == 429:
        cls = BudgetExceededError if _is_quota(fields) else RateLimitError
    elif status == 401:
        cls = AuthenticationError
    elif status == 403:
        cls = PermissionDeniedError
    elif status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = ConflictError
    elif status == 413:
        cls = PayloadTooLargeError
    elif status == 422:
        cls = UnprocessableEntityError
    elif status == 503:
        cls = ServiceUnavailableError
    elif status >= 500:
        cls = InternalServerError
    else:
        cls = SovereignStatusError
    return cls(err_msg, response=response, body=data)
