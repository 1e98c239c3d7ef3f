"""Admin: teams, keys (create/rotate/revoke), usage, policies (upload a routing YAML, activate,
re-activate the earlier one), guardrail, and role checks."""

from __future__ import annotations

import uuid

import openai
import pytest

from sovereign_gateway import AuthenticationError, NotFoundError, PermissionDeniedError, Sovereign
from sovereign_gateway.types import ApiKey, PolicyVersion, Team

ROUTING_DOC = """\
name: python-client-doc
routes:
  - name: small-prompts
    condition: "prompt_tokens < 500"
    model: llama-3.2-3b-instruct
default: qwen2.5-coder-32b
"""


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_a_revoked_key_is_refused(demo, admin: Sovereign):
    team = admin.admin.teams.create(_name("py-revoke"))
    key = admin.admin.keys.create(team.id, "member", name="to-revoke")
    assert key.key and key.key.startswith("sk-sov-")
    user = Sovereign(base_url=demo.url, api_key=key.key, max_retries=0)
    assert user.models.list().data
    revoked = admin.admin.keys.revoke(key.id)
    assert revoked.state == "revoked" and revoked.key is None
    with pytest.raises(AuthenticationError) as e:
        user.models.list()
    assert isinstance(e.value, openai.AuthenticationError) and e.value.status == 401


def test_teams_crud(admin: Sovereign):
    name = _name("py-team")
    team = admin.admin.teams.create(name, budget=5.0, allowed_regions=["sa-riyadh-1"])
    assert isinstance(team, Team) and team.name == name and team.budget == 5.0
    assert team.id in {t.id for t in admin.admin.teams.list().data}
    assert admin.admin.teams.retrieve(team.id).allowed_regions == ["sa-riyadh-1"]
    updated = admin.admin.teams.update(team.id, budget=None, sensitive_only=True)
    assert updated.budget is None and updated.sensitive_only
    assert admin.admin.teams.delete(team.id).deleted
    with pytest.raises(NotFoundError):
        admin.admin.teams.retrieve(team.id)


def test_keys_create_list_rotate_revoke(demo, admin: Sovereign):
    team = admin.admin.teams.create(_name("py-keys"))
    key = admin.admin.keys.create(team.id, "member", name="first", rpm=100)
    assert isinstance(key, ApiKey) and key.key and key.rpm == 100
    listed = admin.admin.keys.list(team_id=team.id).data
    assert [k.id for k in listed] == [key.id] and listed[0].key is None
    assert admin.admin.keys.retrieve(key.id).key is None
    rotated = admin.admin.keys.rotate(key.id, grace_seconds=0)
    assert rotated.key and rotated.key != key.key and rotated.replaces == key.id
    successor = Sovereign(base_url=demo.url, api_key=rotated.key, max_retries=0)
    assert successor.models.list().data
    assert admin.admin.keys.revoke(rotated.id).state == "revoked"


def test_usage(admin: Sovereign, member: Sovereign):
    member.chat.completions.create(model="llama-3.2-3b-instruct", messages=[{"role": "user", "content": "hi"}])
    usage = admin.admin.usage.get()
    assert usage.total.requests >= 1 and usage.data
    team_id = usage.data[0].team_id
    assert all(r.team_id == team_id for r in admin.admin.usage.get(team_id=team_id).data)


def test_policies_upload_activate_and_roll_back(admin: Sovereign):
    before = admin.admin.policies.list()
    assert before.data and before.active
    version = admin.admin.policies.upload(document=ROUTING_DOC)
    try:
        assert isinstance(version, PolicyVersion) and version.active and version.document_sha256
        assert admin.admin.policies.list().active == version.id
    finally:
        back = admin.admin.policies.activate(before.active)
    assert back.id == before.active and back.active
    assert admin.admin.policies.list().active == before.active
    again = admin.admin.policies.activate(version.id)
    assert again.active
    admin.admin.policies.activate(before.active)


def test_guardrail_get_and_set(admin: Sovereign):
    current = admin.admin.guardrail.get()
    assert current.component_sha256 and current.world
    same = admin.admin.guardrail.set(settings=current.settings)
    assert same.component_sha256 == current.component_sha256


def test_an_auditor_may_not_create_a_key(admin: Sovereign, auditor: Sovereign):
    team = admin.admin.teams.list().data[0]
    with pytest.raises(PermissionDeniedError) as e:
        auditor.admin.keys.create(team.id, "member")
    assert e.value.status == 403 and e.value.audit_trace_id
