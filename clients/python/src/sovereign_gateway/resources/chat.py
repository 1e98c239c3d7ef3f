"""Chat with the gateway's routing hints: `client.chat.completions.create(..., routing=...,
routing_preference=..., data_classification=...)` and the typed `client.sovereign.chat(...)` /
`client.sovereign.embed(...)`, whose results carry the sovereignty metadata."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Literal, Mapping, Optional, Union, cast, overload

from openai._compat import cached_property
from openai._resource import AsyncAPIResource, SyncAPIResource
from openai.resources.chat import AsyncChat, Chat
from openai.resources.chat.completions import AsyncCompletions, Completions

from .._metadata import (
    SovereignAsyncStream,
    SovereignChatCompletion,
    SovereignEmbeddingResponse,
    SovereignStream,
)

__all__ = ["SovereignCompletions", "AsyncSovereignCompletions", "SovereignChat", "AsyncSovereignChat",
           "SovereignExtras", "AsyncSovereignExtras", "RoutingPreference"]

RoutingPreference = Literal["cost", "performance", "balanced"]


def with_hints(
    kwargs: Dict[str, Any],
    routing: Optional[Mapping[str, Any]],
    routing_preference: Optional[str],
    data_classification: Optional[str],
) -> Dict[str, Any]:
    """The hints as the gateway reads them: `routing` / `routing_preference` body fields (the
    gateway strips them before the upstream sees the body) and `X-Data-Classification`."""
    extra_body = dict(kwargs.pop("extra_body", None) or {})
    if routing is not None:
        extra_body["routing"] = dict(routing)
    if routing_preference is not None:
        extra_body["routing_preference"] = routing_preference
    if extra_body:
        kwargs["extra_body"] = extra_body
    if data_classification is not None:
        kwargs["extra_headers"] = {**(kwargs.get("extra_headers") or {}), "X-Data-Classification": data_classification}
    return kwargs


class SovereignCompletions(Completions):
    """The SDK's chat completions, plus the gateway's routing hints as keyword arguments."""

    def create(  # type: ignore[override]
        self,
        *args: Any,
        routing: Optional[Mapping[str, Any]] = None,
        routing_preference: Optional[RoutingPreference] = None,
        data_classification: Optional[str] = None,
        **kwargs: Any,
    ) -> Any:
        return super().create(*args, **with_hints(kwargs, routing, routing_preference, data_classification))


class AsyncSovereignCompletions(AsyncCompletions):
    async def create(  # type: ignore[override]
        self,
        *args: Any,
        routing: Optional[Mapping[str, Any]] = None,
        routing_preference: Optional[RoutingPreference] = None,
        data_classification: Optional[str] = None,
        **kwargs: Any,
    ) -> Any:
        return await super().create(*args, **with_hints(kwargs, routing, routing_preference, data_classification))


class SovereignChat(Chat):
    @cached_property
    def completions(self) -> SovereignCompletions:
        return SovereignCompletions(self._client)


class AsyncSovereignChat(AsyncChat):
    @cached_property
    def completions(self) -> AsyncSovereignCompletions:
        return AsyncSovereignCompletions(self._client)


class SovereignExtras(SyncAPIResource):
    """`client.sovereign`: chat and embeddings typed with their sovereignty metadata."""

    @overload
    def chat(self, *, messages: Iterable[Mapping[str, Any]], model: str = ..., stream: Literal[False] = False,
             routing: Optional[Mapping[str, Any]] = ..., routing_preference: Optional[RoutingPreference] = ...,
             data_classification: Optional[str] = ..., **kwargs: Any) -> SovereignChatCompletion: ...

    @overload
    def chat(self, *, messages: Iterable[Mapping[str, Any]], model: str = ..., stream: Literal[True],
             routing: Optional[Mapping[str, Any]] = ..., routing_preference: Optional[RoutingPreference] = ...,
             data_classification: Optional[str] = ..., **kwargs: Any) -> SovereignStream: ...

    def chat(
        self,
        *,
        messages: Iterable[Mapping[str, Any]],
        model: str = "auto-router",
        stream: bool = False,
        routing: Optional[Mapping[str, Any]] = None,
        routing_preference: Optional[RoutingPreference] = None,
        data_classification: Optional[str] = None,
        **kwargs: Any,
    ) -> Union[SovereignChatCompletion, SovereignStream]:
        """createChatCompletion; `model` defaults to the gateway's `auto-router`."""
        completions = cast(SovereignCompletions, self._client.chat.completions)
        return cast(
            Union[SovereignChatCompletion, SovereignStream],
            completions.create(messages=messages, model=model, stream=stream, routing=routing,
                               routing_preference=routing_preference, data_classification=data_classification,
                               **kwargs),
        )

    def embed(self, *, input: Union[str, Iterable[str]], model: str, **kwargs: Any) -> SovereignEmbeddingResponse:
        """createEmbedding."""
        texts = input if isinstance(input, str) else list(input)  # the SDK wants a str or a sequence
        return cast(SovereignEmbeddingResponse, self._client.embeddings.create(input=texts, model=model, **kwargs))


class AsyncSovereignExtras(AsyncAPIResource):
    async def chat(
        self,
        *,
        messages: Iterable[Mapping[str, Any]],
        model: str = "auto-router",
        stream: bool = False,
        routing: Optional[Mapping[str, Any]] = None,
        routing_preference: Optional[RoutingPreference] = None,
        data_classification: Optional[str] = None,
        **kwargs: Any,
    ) -> Union[SovereignChatCompletion, SovereignAsyncStream]:
        completions = cast(AsyncSovereignCompletions, self._client.chat.completions)
        return cast(
            Union[SovereignChatCompletion, SovereignAsyncStream],
            await completions.create(messages=messages, model=model, stream=stream, routing=routing,
                                     routing_preference=routing_preference,
                                     data_classification=data_classification, **kwargs),
        )

    async def embed(self, *, input: Union[str, Iterable[str]], model: str, **kwargs: Any) -> SovereignEmbeddingResponse:
        texts = input if isinstance(input, str) else list(input)
        return cast(SovereignEmbeddingResponse, await self._client.embeddings.create(input=texts, model=model, **kwargs))
