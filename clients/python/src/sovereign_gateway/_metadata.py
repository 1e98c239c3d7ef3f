"""Sovereignty metadata (`X-Sovereign-ID`, `X-Audit-Trace-ID`, `X-Route-Policy`,
`X-Data-Residency`) as typed values on the response objects of chat completions, embeddings
and streams (clients/SPEC.md, "Sovereignty metadata")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

import httpx2
from openai import AsyncStream, Stream
from openai.types import CreateEmbeddingResponse
from openai.types import Model as _Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import Field

__all__ = [
    "Sovereignty",
    "SovereignChatCompletion",
    "SovereignEmbeddingResponse",
    "SovereignStream",
    "SovereignAsyncStream",
    "SovereignModel",
    "sovereignty_of",
]


@dataclass(frozen=True)
class Sovereignty:
    """Where and under which policy an answer was produced, and its journal trace."""

    sovereign_id: Optional[str] = None
    audit_trace_id: Optional[str] = None
    route_policy: Optional[str] = None
    data_residency: Optional[str] = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str] | httpx2.Headers) -> "Sovereignty":
        return cls(
            sovereign_id=headers.get("x-sovereign-id"),
            audit_trace_id=headers.get("x-audit-trace-id"),
            route_policy=headers.get("x-route-policy"),
            data_residency=headers.get("x-data-residency"),
        )


class _ModelProperties:
    """`sovereign_id` … read from the `sovereignty` a result model carries (set by the client
    from the answer's headers when it parses the body). The SDK's `ChatCompletion` and
    `CreateEmbeddingResponse` are not generic, so this plain mixin is safe on them."""

    sovereignty: Optional[Sovereignty]

    @property
    def _meta(self) -> Sovereignty:
        return self.sovereignty or Sovereignty()

    @property
    def sovereign_id(self) -> Optional[str]:
        return self._meta.sovereign_id

    @property
    def audit_trace_id(self) -> Optional[str]:
        return self._meta.audit_trace_id

    @property
    def route_policy(self) -> Optional[str]:
        return self._meta.route_policy

    @property
    def data_residency(self) -> Optional[str]:
        return self._meta.data_residency


class SovereignChatCompletion(_ModelProperties, ChatCompletion):
    """A `ChatCompletion` with the answer's sovereignty metadata (not serialized)."""

    sovereignty: Optional[Sovereignty] = Field(default=None, exclude=True)


class SovereignEmbeddingResponse(_ModelProperties, CreateEmbeddingResponse):
    """A `CreateEmbeddingResponse` with the answer's sovereignty metadata (not serialized)."""

    sovereignty: Optional[Sovereignty] = Field(default=None, exclude=True)


class SovereignModel(_Model):
    """A model of the gateway's fleet: the OpenAI fields plus the gateway's own."""

    family: Optional[str] = None
    kind: Optional[str] = None
    languages: Optional[list[str]] = None
    region: Optional[str] = None
    local: Optional[bool] = None
    context_window: Optional[int] = None
    dimensions: Optional[int] = None
    input_cost_per_mtok: Optional[float] = None
    output_cost_per_mtok: Optional[float] = None


# The stream classes subclass `Stream[ChatCompletionChunk]` directly and only it: the SDK finds a
# stream's chunk type by walking `__orig_bases__` for a parameterized `Stream`/`AsyncStream`, and
# every base listed there must be a generic alias (a plain mixin breaks that walk). So the four
# properties are spelled out here rather than inherited from `_ModelProperties`.
class SovereignStream(Stream[ChatCompletionChunk]):
    """A chat-completion stream; its metadata comes from the answer's headers, so it is there
    before the first chunk is read."""

    @property
    def sovereignty(self) -> Sovereignty:
        return Sovereignty.from_headers(self.response.headers)

    @property
    def sovereign_id(self) -> Optional[str]:
        return self.sovereignty.sovereign_id

    @property
    def audit_trace_id(self) -> Optional[str]:
        return self.sovereignty.audit_trace_id

    @property
    def route_policy(self) -> Optional[str]:
        return self.sovereignty.route_policy

    @property
    def data_residency(self) -> Optional[str]:
        return self.sovereignty.data_residency


class SovereignAsyncStream(AsyncStream[ChatCompletionChunk]):
    """The asyncio `SovereignStream`."""

    @property
    def sovereignty(self) -> Sovereignty:
        return Sovereignty.from_headers(self.response.headers)

    @property
    def sovereign_id(self) -> Optional[str]:
        return self.sovereignty.sovereign_id

    @property
    def audit_trace_id(self) -> Optional[str]:
        return self.sovereignty.audit_trace_id

    @property
    def route_policy(self) -> Optional[str]:
        return self.sovereignty.route_policy

    @property
    def data_residency(self) -> Optional[str]:
        return self.sovereignty.data_residency


def sovereignty_of(obj: Any) -> Sovereignty:
    """The metadata of any object this client returned (a completion, embedding or stream)."""
    meta = getattr(obj, "sovereignty", None)
    return meta if isinstance(meta, Sovereignty) else Sovereignty()
