"""What every resource method shares: per-call request overrides (as in the openai SDK)."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, TypedDict, Union

import httpx2
from openai._base_client import make_request_options
from openai._types import NOT_GIVEN, NotGiven

__all__ = ["RequestOverrides", "request_options", "clean"]


class RequestOverrides(TypedDict, total=False):
    """`extra_headers`, `extra_query`, `extra_body`, `timeout`: as on every openai SDK call."""

    extra_headers: Optional[Mapping[str, str]]
    extra_query: Optional[Mapping[str, object]]
    extra_body: Optional[Mapping[str, object]]
    timeout: Union[float, httpx2.Timeout, None, NotGiven]


def clean(values: Mapping[str, Any]) -> Dict[str, Any]:
    """The given values without the ones left out (None)."""
    return {k: v for k, v in values.items() if v is not None}


def request_options(overrides: RequestOverrides, query: Optional[Mapping[str, Any]] = None) -> Any:
    return make_request_options(
        query=clean(query) if query else None,
        extra_headers=overrides.get("extra_headers"),
        extra_query=overrides.get("extra_query"),
        extra_body=overrides.get("extra_body"),
        timeout=overrides.get("timeout", NOT_GIVEN),
    )
