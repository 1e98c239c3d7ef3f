"""The tool policy world (issue 46 item 4; docs/POLICIES.md "Tool policies") through the real
binary, before the MCP gateway calls it: the examples in the supported guest languages tested
with `sovereign policy test` (the Python example denies a named tool, caps a `limit` argument and
redacts a card number from a result; the Rust test guest by its settings), and the admin API that
installs one (`/v1/admin/tool-policy`: validated before it replaces the active one, a bad upload
a 400 that changes nothing, admins only).

The Python and JavaScript examples are built by `scripts/build-examples` (scripts/test runs it)."""

from __future__ import annotations

import base64
import json
import subprocess

import httpx
import pytest

import harness

RELEASE = harness.REPO / "policies" / "target" / "wasm32-wasip2" / "release"
EXAMPLES = harness.REPO / "target" / "examples"
PYTHON_TOOL = EXAMPLES / "python_tool.wasm"
JS_RETRIEVAL = EXAMPLES / "js_retrieval.wasm"
TOOL_RULES = RELEASE / "tool_rules.wasm"
TOOL_ALLOW = RELEASE / "tool_allow.wasm"
RETRIEVAL_KEEP = RELEASE / "retrieval_keep.wasm"


def built(path):
    assert path.exists(), f"{path} is missing: run scripts/build-examples (scripts/test does)"
    return path


def policy_test(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(harness.BIN), "policy", "test", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_the_python_example_denies_rewrites_and_redacts():
    example = harness.REPO / "examples" / "python-tool"
    out = policy_test(built(PYTHON_TOOL), "--settings", example / "settings.json",
                      "--golden", example / "golden.jsonl")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "world sovereign:policy/tool-policy@0.1.0" in out.stdout
    assert "4 of 4 cases passed" in out.stdout, out.stdout
    assert "[REDACTED card]" in out.stdout


def test_the_js_retrieval_example_passes_the_rust_examples_cases():
    example = harness.REPO / "examples" / "rust-retrieval"
    out = policy_test(built(JS_RETRIEVAL), "--settings", example / "settings.json",
                      "--golden", example / "golden.jsonl")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "5 of 5 cases passed" in out.stdout, out.stdout


def test_a_golden_mismatch_fails_the_run(tmp_path):
    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps({"name": "expects a deny", "call": {"server": "s", "tool": "t"},
                                  "expect_call": "deny"}) + "\n")
    out = policy_test(TOOL_ALLOW, "--golden", golden)
    assert out.returncode == 1, out.stdout
    assert "FAIL expects a deny" in out.stdout


@pytest.fixture(scope="module")
def admin(sim, tmp_path_factory):
    admin_secret, admin_hash = harness.new_key()
    member_secret, member_hash = harness.new_key()
    directory = tmp_path_factory.mktemp("tool-policy")
    config = harness.gateway_config(harness.fleet_models(sim.url),
                                    {"admin": ("admin", admin_hash), "member": ("member", member_hash)})
    gw = harness.start_gateway(config, directory)
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {admin_secret}"}, timeout=120) as a, \
            httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {member_secret}"}, timeout=120) as m:
        a.member = m
        yield a
    gw.kill()


def b64(path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_the_admin_api_installs_a_tool_policy_and_refuses_bad_ones(admin):
    r = admin.get("/v1/admin/tool-policy")
    assert r.status_code == 200, r.text
    assert r.json()["builtin"] is True
    assert r.json()["world"] == "sovereign:policy/tool-policy@0.1.0"

    settings = {"deny": {"delete_records": "no"}}
    r = admin.post("/v1/admin/tool-policy", json={"component_base64": b64(TOOL_RULES), "settings": settings})
    assert r.status_code == 200, r.text
    installed = r.json()
    assert installed["builtin"] is False and json.loads(installed["settings"]) == settings

    for body in ({"component_base64": b64(RETRIEVAL_KEEP)},           # another world
                 {"settings": {"trap": ["echo"]}},                    # fails its smoke call
                 {"component_base64": "not base64!"},
                 {}):
        r = admin.post("/v1/admin/tool-policy", json=body)
        assert r.status_code == 400, (body, r.text)
        assert set(r.json()["error"]) >= {"message", "type", "param", "code"}
    assert admin.get("/v1/admin/tool-policy").json() == installed

    assert admin.member.get("/v1/admin/tool-policy").status_code == 403
    assert admin.member.post("/v1/admin/tool-policy", json={"settings": {}}).status_code == 403
    assert httpx.get(f"{admin.base_url}/v1/admin/tool-policy").status_code == 401
