"""The shared error vectors (tests/vectors/errors.json, clients/SPEC.md "Errors"): every answer
there raises the kind it names, which is also its parent kind, with the fields it lists."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import openai
import pytest

import sovereign_gateway as sg

VECTORS = json.loads((Path(__file__).resolve().parents[3] / "tests" / "vectors" / "errors.json").read_text())

KINDS = {
    "StatusError": sg.SovereignStatusError,
    "BadRequest": sg.BadRequestError,
    "GuardrailViolation": sg.GuardrailViolationError,
    "Authentication": sg.AuthenticationError,
    "PermissionDenied": sg.PermissionDeniedError,
    "NotFound": sg.NotFoundError,
    "Conflict": sg.ConflictError,
    "PayloadTooLarge": sg.PayloadTooLargeError,
    "UnprocessableEntity": sg.UnprocessableEntityError,
    "DataResidency": sg.DataResidencyError,
    "RateLimit": sg.RateLimitError,
    "BudgetExceeded": sg.BudgetExceededError,
    "InternalServer": sg.InternalServerError,
    "ServiceUnavailable": sg.ServiceUnavailableError,
}


def test_the_table_names_exactly_the_shared_kinds():
    assert set(KINDS) == set(VECTORS["kinds"])
    for kind, parent in VECTORS["kinds"].items():
        if parent is not None:
            assert issubclass(KINDS[kind], KINDS[parent]), (kind, parent)
    assert all(issubclass(cls, openai.APIStatusError) for cls in KINDS.values())


def _ancestors(kind: str):
    parent = VECTORS["kinds"][kind]
    while parent is not None:
        yield parent
        parent = VECTORS["kinds"][parent]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=[v["name"] for v in VECTORS["vectors"]])
def test_vector(vector):
    body = vector["body"]
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    answer = httpx2.Response(vector["status"], headers=vector["headers"], content=content)
    seen: list = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return answer

    client = sg.Sovereign(base_url="http://gw.test", api_key="k", max_retries=0,
                          http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(openai.APIStatusError) as caught:
        client.models.list()
    err = caught.value
    assert type(err) is KINDS[vector["kind"]], (type(err).__name__, vector["kind"])
    assert vector["parent"] == VECTORS["kinds"][vector["kind"]]
    for ancestor in _ancestors(vector["kind"]):
        assert isinstance(err, KINDS[ancestor]), ancestor
    fields = vector["fields"]
    got = {
        "status": err.status,
        "type": err.type,
        "code": err.code,
        "param": err.param,
        "message": err.message,
        "audit_trace_id": err.audit_trace_id,
        "retry_after": getattr(err, "retry_after", None),
    }
    for name, want in fields.items():
        assert got[name] == want, (name, got[name], want)
