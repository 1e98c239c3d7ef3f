"""Every operation clients/openapi.json marks `x-sovereign-client` is in
`sovereign_gateway._operations.OPERATIONS`, and every method the table names exists."""

from __future__ import annotations

import functools
import json

import pytest

import sovereign_gateway
from sovereign_gateway import AsyncSovereign, Sovereign
from sovereign_gateway._operations import LOCAL_HELPERS, OPERATIONS

from conftest import REPO

OPENAPI = REPO / "clients" / "openapi.json"
SPEC_TABLE = {
    "createChatCompletion", "createEmbedding", "listModels", "retrieveModel", "uploadDocument",
    "listDocuments", "retrieveDocument", "deleteDocument", "queryRag", "queryActivityLogs",
    "verifyJournal", "createJournalCheckpoint", "listJournalCheckpoints", "getActivityCheckpoint",
    "getActivityCheckpointKey", "getInclusionProof", "getConsistencyProof", "listTeams", "createTeam",
    "retrieveTeam", "updateTeam", "deleteTeam", "listKeys", "createKey", "retrieveKey", "rotateKey",
    "revokeKey", "getUsage", "listPolicies", "uploadPolicy", "activatePolicy", "getGuardrail",
    "setGuardrail",
}


def _marked() -> set:
    doc = json.loads(OPENAPI.read_text())
    ops = set()
    for path_item in doc.get("paths", {}).values():
        for op in path_item.values():
            if isinstance(op, dict) and op.get("x-sovereign-client") is True:
                ops.add(op["operationId"])
    return ops


def test_openapi_marked_operations_match_the_table():
    if not OPENAPI.exists():
        pytest.skip("clients/openapi.json does not exist yet")
    marked = _marked()
    assert marked, "openapi.json marks no operation x-sovereign-client"
    assert sorted(marked - set(OPERATIONS)) == [], "marked in openapi.json, missing from OPERATIONS"
    assert sorted(set(OPERATIONS) - marked) == [], "in OPERATIONS, not marked in openapi.json"


def test_the_table_matches_spec_md():
    assert set(OPERATIONS) == SPEC_TABLE


@pytest.mark.parametrize("cls", [Sovereign, AsyncSovereign])
def test_every_method_in_the_table_exists(cls):
    client = cls(base_url="http://gw.test", api_key="k")
    for op, paths in OPERATIONS.items():
        assert paths, op
        for path in paths:
            assert callable(functools.reduce(getattr, path.split("."), client)), (op, path)
    for name in LOCAL_HELPERS:
        assert callable(getattr(sovereign_gateway, name))
