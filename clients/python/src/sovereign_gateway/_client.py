"""`Sovereign` / `AsyncSovereign`: the openai SDK's clients pointed at a Sovereign Gateway, with
the gateway's typed errors, retry rules (clients/SPEC.md, "Errors"), TLS options, sovereignty
metadata on results, and the gateway's own resources next to the SDK's."""

from __future__ import annotations

import math
import os
import random
import re
import ssl
import time
from typing import Any, Optional, Tuple, Union

import httpx2
import openai
from openai._compat import cached_property
from openai._streaming import AsyncStream, Stream
from openai.pagination import AsyncPage, SyncPage
from openai.types import CreateEmbeddingResponse, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from ._errors import APIConnectionError, APITimeoutError, make_status_error
from ._metadata import (
    Sovereignty,
    SovereignAsyncStream,
    SovereignChatCompletion,
    SovereignEmbeddingResponse,
    SovereignModel,
    SovereignStream,
)
from .resources.activity import Activity, AsyncActivity, AsyncJournal, Journal
from .resources.admin import Admin, AsyncAdmin
from .resources.chat import AsyncSovereignChat, AsyncSovereignExtras, SovereignChat, SovereignExtras
from .resources.documents import AsyncDocuments, AsyncRag, Documents, Rag

__all__ = ["Sovereign", "AsyncSovereign", "CERTIFICATE_ONLY", "MAX_RETRY_WAIT"]

#: The bearer placeholder sent when a client certificate is the identity (docs/TLS.md: a mapped
#: certificate with a placeholder that is not a gateway key authenticates as the certificate).
CERTIFICATE_ONLY = "mtls-certificate"
#: Longest wait before one retry, whatever the gateway asks (clients/SPEC.md, "Retries").
MAX_RETRY_WAIT = 60.0
_RETRIED_STATUSES = frozenset({429, 502, 503, 504})
# Calls with an effect that a retry after sending could repeat (SPEC.md: retried only on 429).
_NON_IDEMPOTENT = re.compile(r"/v1/(admin/teams|admin/keys(/[^/]+/(rotate|revoke))?|documents/upload)$")

ClientCert = Union[str, os.PathLike, Tuple[Union[str, os.PathLike], Union[str, os.PathLike]]]


def _base_url(url: Union[str, httpx2.URL, None]) -> str:
    url = url if url is not None else os.environ.get("SOVEREIGN_BASE_URL")
    if not url:
        raise openai.OpenAIError(
            "The gateway's address is missing: pass base_url= (its root or …/v1) or set SOVEREIGN_BASE_URL."
        )
    text = str(url).rstrip("/")
    return text if text.endswith("/v1") else text + "/v1"


def _ssl_context(ca_bundle: Optional[Union[str, os.PathLike]], client_cert: Optional[ClientCert]) -> Optional[ssl.SSLContext]:
    if ca_bundle is None and client_cert is None:
        return None
    ctx = ssl.create_default_context(cafile=os.fspath(ca_bundle) if ca_bundle is not None else None)
    if client_cert is not None:
        if isinstance(client_cert, tuple):
            cert, key = client_cert
            ctx.load_cert_chain(os.fspath(cert), os.fspath(key))
        else:
            ctx.load_cert_chain(os.fspath(client_cert))
    return ctx


def _settings(
    api_key: Optional[str],
    base_url: Union[str, httpx2.URL, None],
    ca_bundle: Optional[Union[str, os.PathLike]],
    client_cert: Optional[ClientCert],
    http_client: Any,
    make_http_client: Any,
) -> Tuple[Optional[str], str, Any]:
    key = api_key or os.environ.get("SOVEREIGN_API_KEY") or None
    if key is None:
        if client_cert is None:
            raise openai.OpenAIError(
                "The gateway's API key is missing: pass api_key= or set SOVEREIGN_API_KEY (the OPENAI_* "
                "variables are never read), or pass client_cert= for a client certificate mapped to an identity."
            )
        key = CERTIFICATE_ONLY
    ctx = _ssl_context(ca_bundle, client_cert)
    if ctx is not None:
        if http_client is not None:
            raise ValueError("Pass either ca_bundle/client_cert or http_client, not both.")
        http_client = make_http_client(verify=ctx)
    return key, _base_url(base_url), http_client


# What the SDK's constructor takes from the OPENAI_* variables when not given: a client of the
# gateway uses only its own settings (SOVEREIGN_* or arguments), so these are reset after it ran.
_SDK_ENVIRONMENT = ("admin_api_key", "organization", "project", "webhook_secret")


def _own_settings_only(client: Any, kwargs: Any) -> None:
    """Undoes what the SDK's constructor read from `OPENAI_ADMIN_KEY`, `OPENAI_ORG_ID`,
    `OPENAI_PROJECT_ID`, `OPENAI_WEBHOOK_SECRET` and `OPENAI_CUSTOM_HEADERS` (the key and base URL
    are always passed, so `OPENAI_API_KEY` / `OPENAI_BASE_URL` are never looked at); values
    passed as arguments stay."""
    for name in _SDK_ENVIRONMENT:
        setattr(client, name, kwargs.get(name))
    client._custom_headers = dict(kwargs.get("default_headers") or {})
    client._ambient_authorizations = frozenset()


def _non_idempotent(request: httpx2.Request) -> bool:
    return request.method == "POST" and _NON_IDEMPOTENT.search(request.url.path) is not None


def _swap_types(cast_to: Any, stream_cls: Any, sync: bool) -> Tuple[Any, Any]:
    """The SDK's result types → the same types carrying the sovereignty metadata."""
    if cast_to is ChatCompletion:
        cast_to = SovereignChatCompletion
    elif cast_to is CreateEmbeddingResponse:
        cast_to = SovereignEmbeddingResponse
    elif cast_to is Model:
        cast_to = SovereignModel
    if sync and stream_cls == Stream[ChatCompletionChunk]:
        stream_cls = SovereignStream
    elif not sync and stream_cls == AsyncStream[ChatCompletionChunk]:
        stream_cls = SovereignAsyncStream
    return cast_to, stream_cls


def _attach(result: Any, response: httpx2.Response) -> None:
    if isinstance(result, (SovereignChatCompletion, SovereignEmbeddingResponse)):
        result.sovereignty = Sovereignty.from_headers(response.headers)


class _GatewayRules:
    """The gateway's error mapping and retry rules, shared by the sync and async clients."""

    def _process_response_data(self, *, data: object, cast_to: Any, response: httpx2.Response) -> Any:
        # The SDK's one place where a body becomes a typed result (plain calls, and
        # `.with_raw_response…parse()`), with the answer at hand: attach its headers there.
        result = super()._process_response_data(data=data, cast_to=cast_to, response=response)  # type: ignore[misc]
        _attach(result, response)
        return result

    def _make_status_error(self, err_msg: str, *, body: object, response: httpx2.Response) -> openai.APIStatusError:
        return make_status_error(err_msg, body=body, response=response)

    def _should_retry(self, response: httpx2.Response) -> bool:
        if response.headers.get("x-should-retry") == "false":
            return False  # an exhausted budget (insufficient_quota)
        status = response.status_code
        if status not in _RETRIED_STATUSES:
            return False
        if status != 429 and _non_idempotent(response.request):
            return False
        if status == 429:
            try:
                body = response.json()
            except (httpx2.ResponseNotRead, ValueError):
                body = None
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, dict) and (
                "insufficient_quota" in (error.get("type"), error.get("code"))
                or error.get("type") == "guardrail_violation"
            ):
                return False
        return True

    def _calculate_retry_timeout(
        self, remaining_retries: int, options: Any, response_headers: Optional[httpx2.Headers] = None
    ) -> float:
        if response_headers is not None:
            wait: Optional[float] = None
            value = response_headers.get("retry-after")
            if value is not None:
                try:
                    wait = float(value)
                except ValueError:
                    wait = None
            if wait is None and response_headers.get("x-ratelimit-reset") is not None:
                try:
                    wait = float(response_headers["x-ratelimit-reset"]) - time.time()
                except ValueError:
                    wait = None
            if wait is not None and math.isfinite(wait):
                return min(max(wait, 0.0), MAX_RETRY_WAIT)
        max_retries = options.get_max_retries(self.max_retries)  # type: ignore[attr-defined]
        attempt = min(max_retries - remaining_retries, 1000)
        backoff = min(0.5 * 2.0**attempt, 8.0)
        return min(backoff * (1 - 0.25 * random.random()), MAX_RETRY_WAIT)


class Sovereign(_GatewayRules, openai.OpenAI):
    """An `openai.OpenAI` client for a Sovereign Gateway.

    `base_url` is the gateway's root or its `/v1` (default: `SOVEREIGN_BASE_URL`), `api_key` a
    gateway key (default: `SOVEREIGN_API_KEY`; none is needed with a mapped `client_cert`;
    without either, `OpenAIError` naming SOVEREIGN_API_KEY). The SDK's `OPENAI_*` variables are
    never read.
    `ca_bundle` (PEM) is trusted for TLS, `client_cert` is `(cert.pem, key.pem)` (or one PEM with
    both) for mutual TLS. `max_retries` (default 2; 0 disables) applies to 429, 502/503/504 and
    connection errors."""

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Union[str, httpx2.URL, None] = None,
        ca_bundle: Optional[Union[str, os.PathLike]] = None,
        client_cert: Optional[ClientCert] = None,
        max_retries: int = 2,
        http_client: Optional[httpx2.Client] = None,
        **kwargs: Any,
    ) -> None:
        key, url, http_client = _settings(api_key, base_url, ca_bundle, client_cert, http_client,
                                          openai.DefaultHttpxClient)
        super().__init__(api_key=key, base_url=url, max_retries=max_retries, http_client=http_client, **kwargs)
        _own_settings_only(self, kwargs)

    # -- the gateway's resources -------------------------------------------------------------
    @cached_property
    def chat(self) -> SovereignChat:  # type: ignore[override]
        return SovereignChat(self)

    @cached_property
    def sovereign(self) -> SovereignExtras:
        return SovereignExtras(self)

    @cached_property
    def documents(self) -> Documents:
        return Documents(self)

    @cached_property
    def rag(self) -> Rag:
        return Rag(self)

    @cached_property
    def activity(self) -> Activity:
        return Activity(self)

    @cached_property
    def journal(self) -> Journal:
        return Journal(self)

    @cached_property
    def admin(self) -> Admin:  # type: ignore[override]
        return Admin(self)

    # -- hooks into the SDK's request loop ---------------------------------------------------
    def request(self, cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None) -> Any:  # type: ignore[override]
        cast_to, stream_cls = _swap_types(cast_to, stream_cls, sync=True)
        return super().request(cast_to, options, stream=stream, stream_cls=stream_cls)

    def _request_api_list(self, model: Any, page: Any, options: Any) -> Any:
        if page == SyncPage[Model]:
            model, page = SovereignModel, SyncPage[SovereignModel]
        return super()._request_api_list(model, page, options)

    def _send_request(self, request: httpx2.Request, *, stream: bool, **kwargs: Any) -> httpx2.Response:  # type: ignore[override]
        try:
            return super()._send_request(request, stream=stream, **kwargs)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            raise  # never reached the gateway: the SDK retries
        except httpx2.TimeoutException as e:
            if _non_idempotent(request):
                raise APITimeoutError(request=request) from e
            raise
        except httpx2.TransportError as e:
            if _non_idempotent(request):
                raise APIConnectionError(request=request) from e
            raise


class AsyncSovereign(_GatewayRules, openai.AsyncOpenAI):
    """The asyncio `Sovereign` (an `openai.AsyncOpenAI`)."""

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Union[str, httpx2.URL, None] = None,
        ca_bundle: Optional[Union[str, os.PathLike]] = None,
        client_cert: Optional[ClientCert] = None,
        max_retries: int = 2,
        http_client: Optional[httpx2.AsyncClient] = None,
        **kwargs: Any,
    ) -> None:
        key, url, http_client = _settings(api_key, base_url, ca_bundle, client_cert, http_client,
                                          openai.DefaultAsyncHttpxClient)
        super().__init__(api_key=key, base_url=url, max_retries=max_retries, http_client=http_client, **kwargs)
        _own_settings_only(self, kwargs)

    @cached_property
    def chat(self) -> AsyncSovereignChat:  # type: ignore[override]
        return AsyncSovereignChat(self)

    @cached_property
    def sovereign(self) -> AsyncSovereignExtras:
        return AsyncSovereignExtras(self)

    @cached_property
    def documents(self) -> AsyncDocuments:
        return AsyncDocuments(self)

    @cached_property
    def rag(self) -> AsyncRag:
        return AsyncRag(self)

    @cached_property
    def activity(self) -> AsyncActivity:
        return AsyncActivity(self)

    @cached_property
    def journal(self) -> AsyncJournal:
        return AsyncJournal(self)

    @cached_property
    def admin(self) -> AsyncAdmin:  # type: ignore[override]
        return AsyncAdmin(self)

    async def request(self, cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None) -> Any:  # type: ignore[override]
        cast_to, stream_cls = _swap_types(cast_to, stream_cls, sync=False)
        return await super().request(cast_to, options, stream=stream, stream_cls=stream_cls)

    def _request_api_list(self, model: Any, page: Any, options: Any) -> Any:
        if page == AsyncPage[Model]:
            model, page = SovereignModel, AsyncPage[SovereignModel]
        return super()._request_api_list(model, page, options)

    async def _send_request(self, request: httpx2.Request, *, stream: bool, **kwargs: Any) -> httpx2.Response:  # type: ignore[override]
        try:
            return await super()._send_request(request, stream=stream, **kwargs)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            raise
        except httpx2.TimeoutException as e:
            if _non_idempotent(request):
                raise APITimeoutError(request=request) from e
            raise
        except httpx2.TransportError as e:
            if _non_idempotent(request):
                raise APIConnectionError(request=request) from e
            raise


