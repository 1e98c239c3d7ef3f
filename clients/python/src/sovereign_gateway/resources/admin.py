"""`client.admin`: teams, keys, usage, router policies and the guardrail (docs/LIMITS.md,
docs/POLICIES.md, docs/GUARDRAIL.md). Replaces the openai SDK's `admin` (OpenAI's own
organization API, which a gateway does not serve).

The asyncio classes share each method's request building with the sync ones: there, every
method returns an awaitable of the same typed result."""

from __future__ import annotations

import base64
from typing import Any, Dict, Iterable, Literal, Mapping, Optional, Type, TypeVar, Union

from openai._compat import cached_property
from openai._resource import AsyncAPIResource, SyncAPIResource
from openai._types import NOT_GIVEN, NotGiven
from typing_extensions import Unpack

from ..types import (
    ApiKey,
    ApiKeyList,
    Guardrail,
    PolicyList,
    PolicyVersion,
    Team,
    TeamDeleted,
    TeamList,
    Usage,
)
from ._common import RequestOverrides, clean, request_options

__all__ = ["Admin", "AsyncAdmin", "Teams", "Keys", "UsageResource", "Policies", "GuardrailResource"]

T = TypeVar("T")
Role = Literal["member", "auditor", "admin"]


class _Calls:
    """One request; sync or async after the client the resource belongs to."""

    _client: Any

    def _call(
        self,
        method: str,
        path: str,
        cast_to: Type[T],
        overrides: RequestOverrides,
        body: Optional[Mapping[str, Any]] = None,
        query: Optional[Mapping[str, Any]] = None,
    ) -> T:
        from openai._models import FinalRequestOptions

        opts = FinalRequestOptions.construct(
            method=method, url=path, json_data=body, **request_options(overrides, query)
        )
        return self._client.request(cast_to, opts)  # type: ignore[no-any-return]


def _given(**fields: Any) -> Dict[str, Any]:
    """The fields given (a PATCH sends `None` as null: it clears)."""
    return {k: v for k, v in fields.items() if not isinstance(v, NotGiven)}


class Teams(_Calls, SyncAPIResource):
    def list(self, **overrides: Unpack[RequestOverrides]) -> TeamList:
        """listTeams: `GET /v1/admin/teams`."""
        return self._call("get", "/admin/teams", TeamList, overrides)

    def create(
        self,
        name: str,
        *,
        plan: Optional[str] = None,
        budget: Optional[float] = None,
        token_cap_per_day: Optional[int] = None,
        allowed_regions: Optional[Iterable[str]] = None,
        sensitive_only: Optional[bool] = None,
        allowed_models: Optional[Iterable[str]] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> Team:
        """createTeam: `POST /v1/admin/teams` (not retried once sent, except on 429)."""
        body = clean({
            "name": name, "plan": plan, "budget": budget, "token_cap_per_day": token_cap_per_day,
            "allowed_regions": list(allowed_regions) if allowed_regions is not None else None,
            "sensitive_only": sensitive_only,
            "allowed_models": list(allowed_models) if allowed_models is not None else None,
        })
        return self._call("post", "/admin/teams", Team, overrides, body)

    def retrieve(self, team_id: str, **overrides: Unpack[RequestOverrides]) -> Team:
        """retrieveTeam: `GET /v1/admin/teams/{id}`."""
        return self._call("get", f"/admin/teams/{team_id}", Team, overrides)

    def update(
        self,
        team_id: str,
        *,
        name: Union[str, NotGiven] = NOT_GIVEN,
        plan: Union[str, NotGiven] = NOT_GIVEN,
        budget: Union[float, None, NotGiven] = NOT_GIVEN,
        token_cap_per_day: Union[int, None, NotGiven] = NOT_GIVEN,
        allowed_regions: Union[Iterable[str], NotGiven] = NOT_GIVEN,
        sensitive_only: Union[bool, NotGiven] = NOT_GIVEN,
        allowed_models: Union[Iterable[str], NotGiven] = NOT_GIVEN,
        **overrides: Unpack[RequestOverrides],
    ) -> Team:
        """updateTeam: `PATCH /v1/admin/teams/{id}`; fields given change, `None` clears
        `budget` / `token_cap_per_day`."""
        body = _given(name=name, plan=plan, budget=budget, token_cap_per_day=token_cap_per_day,
                      allowed_regions=allowed_regions, sensitive_only=sensitive_only, allowed_models=allowed_models)
        for k in ("allowed_regions", "allowed_models"):
            if k in body:
                body[k] = list(body[k])
        return self._call("patch", f"/admin/teams/{team_id}", Team, overrides, body)

    def delete(self, team_id: str, **overrides: Unpack[RequestOverrides]) -> TeamDeleted:
        """deleteTeam: `DELETE /v1/admin/teams/{id}`."""
        return self._call("delete", f"/admin/teams/{team_id}", TeamDeleted, overrides)


class Keys(_Calls, SyncAPIResource):
    def list(self, *, team_id: Optional[str] = None, **overrides: Unpack[RequestOverrides]) -> ApiKeyList:
        """listKeys: `GET /v1/admin/keys` (no secrets)."""
        return self._call("get", "/admin/keys", ApiKeyList, overrides, query={"team_id": team_id})

    def create(
        self,
        team_id: str,
        role: Role = "member",
        *,
        name: Optional[str] = None,
        expires_at: Optional[Union[int, str]] = None,
        ip_allowlist: Optional[Iterable[str]] = None,
        rpm: Optional[int] = None,
        tpd: Optional[int] = None,
        budget: Optional[float] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> ApiKey:
        """createKey: `POST /v1/admin/keys`; the answer's `key` is the secret, shown once."""
        body = clean({
            "team_id": team_id, "role": role, "name": name, "expires_at": expires_at,
            "ip_allowlist": list(ip_allowlist) if ip_allowlist is not None else None,
            "rpm": rpm, "tpd": tpd, "budget": budget,
        })
        return self._call("post", "/admin/keys", ApiKey, overrides, body)

    def retrieve(self, key_id: str, **overrides: Unpack[RequestOverrides]) -> ApiKey:
        """retrieveKey: `GET /v1/admin/keys/{id}`."""
        return self._call("get", f"/admin/keys/{key_id}", ApiKey, overrides)

    def rotate(
        self, key_id: str, *, grace_seconds: Optional[int] = None, **overrides: Unpack[RequestOverrides]
    ) -> ApiKey:
        """rotateKey: `POST /v1/admin/keys/{id}/rotate`: the successor with its secret (`key`);
        the old key keeps working for `grace_seconds`."""
        return self._call("post", f"/admin/keys/{key_id}/rotate", ApiKey, overrides,
                          clean({"grace_seconds": grace_seconds}))

    def revoke(self, key_id: str, **overrides: Unpack[RequestOverrides]) -> ApiKey:
        """revokeKey: `POST /v1/admin/keys/{id}/revoke`; effective when this returns."""
        return self._call("post", f"/admin/keys/{key_id}/revoke", ApiKey, overrides)


class UsageResource(_Calls, SyncAPIResource):
    def get(
        self,
        *,
        team_id: Optional[str] = None,
        key_id: Optional[str] = None,
        model: Optional[str] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> Usage:
        """getUsage: `GET /v1/admin/usage`: requests, tokens and spend per team/key/model."""
        query = {"team_id": team_id, "key_id": key_id, "model": model, "from": from_, "to": to}
        return self._call("get", "/admin/usage", Usage, overrides, query=query)


class Policies(_Calls, SyncAPIResource):
    def list(self, **overrides: Unpack[RequestOverrides]) -> PolicyList:
        """listPolicies: `GET /v1/admin/policies`, oldest first; `active` names the active one."""
        return self._call("get", "/admin/policies", PolicyList, overrides)

    def upload(
        self,
        *,
        document: Optional[str] = None,
        component: Optional[bytes] = None,
        pool: Optional[Literal["fresh", "warm"]] = None,
        activate: Optional[bool] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> PolicyVersion:
        """uploadPolicy: `POST /v1/admin/policies`: a routing YAML `document` and/or a Wasm
        `component`; a document alone reuses the active component. Validated before it can
        become active; `activate` defaults to true on the gateway."""
        body = clean({
            "document": document,
            "component_base64": base64.b64encode(component).decode() if component is not None else None,
            "pool": pool, "activate": activate,
        })
        return self._call("post", "/admin/policies", PolicyVersion, overrides, body)

    def activate(self, policy_id: str, **overrides: Unpack[RequestOverrides]) -> PolicyVersion:
        """activatePolicy: `POST /v1/admin/policies/{id}/activate` (also a rollback)."""
        return self._call("post", f"/admin/policies/{policy_id}/activate", PolicyVersion, overrides)


class GuardrailResource(_Calls, SyncAPIResource):
    def get(self, **overrides: Unpack[RequestOverrides]) -> Guardrail:
        """getGuardrail: `GET /v1/admin/guardrail`."""
        return self._call("get", "/admin/guardrail", Guardrail, overrides)

    def set(
        self,
        *,
        settings: Optional[Union[Mapping[str, Any], str]] = None,
        component: Optional[bytes] = None,
        **overrides: Unpack[RequestOverrides],
    ) -> Guardrail:
        """setGuardrail: `POST /v1/admin/guardrail`: new settings and/or component, validated
        before they replace the active guardrail."""
        body = clean({
            "settings": dict(settings) if isinstance(settings, Mapping) else settings,
            "component_base64": base64.b64encode(component).decode() if component is not None else None,
        })
        return self._call("post", "/admin/guardrail", Guardrail, overrides, body)


class Admin(SyncAPIResource):
    @cached_property
    def teams(self) -> Teams:
        return Teams(self._client)

    @cached_property
    def keys(self) -> Keys:
        return Keys(self._client)

    @cached_property
    def usage(self) -> UsageResource:
        return UsageResource(self._client)

    @cached_property
    def policies(self) -> Policies:
        return Policies(self._client)

    @cached_property
    def guardrail(self) -> GuardrailResource:
        return GuardrailResource(self._client)


# asyncio: the same methods; `_call` goes through the async client, so each returns an awaitable.
class AsyncTeams(Teams, AsyncAPIResource):  # type: ignore[misc]
    pass


class AsyncKeys(Keys, AsyncAPIResource):  # type: ignore[misc]
    pass


class AsyncUsageResource(UsageResource, AsyncAPIResource):  # type: ignore[misc]
    pass


class AsyncPolicies(Policies, AsyncAPIResource):  # type: ignore[misc]
    pass


class AsyncGuardrailResource(GuardrailResource, AsyncAPIResource):  # type: ignore[misc]
    pass


class AsyncAdmin(AsyncAPIResource):
    @cached_property
    def teams(self) -> AsyncTeams:
        return AsyncTeams(self._client)  # type: ignore[arg-type]

    @cached_property
    def keys(self) -> AsyncKeys:
        return AsyncKeys(self._client)  # type: ignore[arg-type]

    @cached_property
    def usage(self) -> AsyncUsageResource:
        return AsyncUsageResource(self._client)  # type: ignore[arg-type]

    @cached_property
    def policies(self) -> AsyncPolicies:
        return AsyncPolicies(self._client)  # type: ignore[arg-type]

    @cached_property
    def guardrail(self) -> AsyncGuardrailResource:
        return AsyncGuardrailResource(self._client)  # type: ignore[arg-type]
