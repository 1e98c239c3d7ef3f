"""Issue 46 through the real binary: stdio upstream MCP servers, and prompts and resources
aggregated (docs/MCP.md). Two FastMCP servers over stdio (tests/python/mcp_stdio_server.py) are
declared in the config file — `notes` for teams t1 and t2, `vault` for t1 — and started by the
gateway as sandboxed child processes. Clients: plain HTTP with the 2026-07-28 headers and the
official Python SDK in a 2025-11-25 session.

The tests share one gateway and run in file order; the last one stops it, checks that the
children were killed, and checks the journal: it verifies, and holds one entry per `tools/call`,
`prompts/get` and `resources/read` sent (`SENT`), with hashes, never the texts."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import harness

mcp_client = pytest.importorskip("mcp.client.client")
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

CARD = harness.CARD
HERE = Path(__file__).resolve().parent
SERVER = HERE / "mcp_stdio_server.py"
GUARD = json.dumps({"default": "redact", "entities": {"credit_card": "block"},
                    "teams": {"t2": {"credit_card": "redact"}}})
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
SENT = {"tools/call": 0, "prompts/get": 0, "resources/read": 0}
PIDS: set[int] = set()


@pytest.fixture(scope="module")
def keys():
    made = {name: harness.new_key() for name in ("admin", "member", "member2", "narrow")}
    return {
        "secret": {name: k[0] for name, k in made.items()},
        "config": {"admin": ("admin", made["admin"][1]), "member": ("member", made["member"][1]),
                   "member2": ("member", made["member2"][1], "t2"),
                   "narrow": ("member", made["narrow"][1])},
    }


@pytest.fixture(scope="module")
def gw(keys, tmp_path_factory):
    extra = harness.UNLIMITED + f"""
[guardrail]
settings = {json.dumps(GUARD)}

[mcp]
call_timeout_ms = 20000
# A first request starts a Python server: generous under a loaded machine.
list_timeout_ms = 20000

[[mcp.servers]]
name = "notes"
command = [{json.dumps(sys.executable)}, {json.dumps(str(SERVER))}, "notes"]
env = {{ NOTES_TOKEN = "from-config" }}
memory_mb = 1024
cpu_seconds = 600
teams = ["t1", "t2"]

[[mcp.servers]]
name = "vault"
command = [{json.dumps(sys.executable)}, {json.dumps(str(SERVER))}, "vault"]
teams = ["t1"]
"""
    directory = tmp_path_factory.mktemp("mcp-stdio")
    config = harness.gateway_config(harness.fleet_models("http://127.0.0.1:9"), keys["config"], extra=extra,
                                    journal={"enabled": True})
    # A secret in the gateway's own environment that no child may see.
    p = harness.start_gateway(config, directory, env={"GATEWAY_SECRET": "do-not-leak"})
    p.directory = directory
    yield p
    p.kill()


def auth(keys, who="member"):
    return {"Authorization": f"Bearer {keys['secret'][who]}"}


def post(gw, keys, method, params=None, who="member", name=None, rid=1):
    """A 2026-07-28 POST with its headers."""
    h = {**auth(keys, who), "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    if method in SENT:
        SENT[method] += 1
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**(params or {}), "_meta": META}}
    return httpx.post(f"{gw.url}/mcp", headers=h, json=body, timeout=60)


def tool(gw, keys, name, arguments=None, who="member"):
    r = post(gw, keys, "tools/call", {"name": name, "arguments": arguments or {}}, who=who, name=name)
    assert r.status_code in (200, 400, 404, 502), r.text
    return r.json()


def text_of(answer):
    assert "result" in answer, answer
    return answer["result"]["content"][0]["text"]


def listed(gw, keys, method, field, key, who="member"):
    r = post(gw, keys, method, who=who)
    assert r.status_code == 200, r.text
    return sorted(item[key] for item in r.json()["result"][field])


def test_stdio_servers_tools_are_listed_by_team_and_callable(gw, keys):
    t1 = listed(gw, keys, "tools/list", "tools", "name")
    assert {"notes__echo", "notes__crash", "vault__echo"} <= set(t1), t1
    t2 = listed(gw, keys, "tools/list", "tools", "name", who="member2")
    assert "notes__echo" in t2 and not any(n.startswith("vault__") for n in t2), t2
    assert text_of(tool(gw, keys, "notes__echo", {"text": "hi"})) == "notes echo: hi"
    assert text_of(tool(gw, keys, "vault__echo", {"text": "hi"})) == "vault echo: hi"
    # Not granted: the same answer as a tool that does not exist.
    refused = tool(gw, keys, "vault__echo", {"text": "hi"}, who="member2")
    assert refused["error"]["code"] == -32602, refused


def test_the_child_sees_only_the_operator_s_environment_under_the_caps(gw, keys):
    assert text_of(tool(gw, keys, "notes__env", {"name": "NOTES_TOKEN"})) == "from-config"
    for name in ("GATEWAY_SECRET", "PATH", "HOME"):
        assert text_of(tool(gw, keys, "notes__env", {"name": name})) == "<unset>", name
    assert text_of(tool(gw, keys, "vault__env", {"name": "NOTES_TOKEN"})) == "<unset>"
    # memory_mb = 1024, cpu_seconds = 600 for notes; the defaults (2048 MiB, 3600 s) for vault.
    assert text_of(tool(gw, keys, "notes__limits")) == f"{1024 << 20} 600"
    assert text_of(tool(gw, keys, "vault__limits")) == f"{2048 << 20} 3600"


def test_one_process_is_shared_by_concurrent_callers(gw, keys):
    before = text_of(tool(gw, keys, "notes__pid"))

    def one(i):
        who = "member" if i % 2 else "member2"
        return i, text_of(tool(gw, keys, "notes__echo", {"text": f"n{i}"}, who=who))

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(one, range(64)))
    # Multiplexed by id: every caller got its own answer.
    assert all(text == f"notes echo: n{i}" for i, text in answers), answers
    assert text_of(tool(gw, keys, "notes__pid", who="member2")) == before
    PIDS.add(int(before))


def test_a_crashed_process_fails_its_call_clearly_and_is_restarted(gw, keys, tmp_path):
    first = int(text_of(tool(gw, keys, "notes__pid")))
    mark = tmp_path / "slow-arrived"
    with ThreadPoolExecutor(1) as pool:
        # A call in flight when the process dies gets the same clear error.
        in_flight = pool.submit(tool, gw, keys, "notes__slow", {"seconds": 10, "mark": str(mark)}, "member2")
        harness.wait_for(mark.exists, timeout=20, what="the slow call to reach the server")
        crashed = tool(gw, keys, "notes__crash")
        slow = in_flight.result(timeout=30)
    for answer in (crashed, slow):
        assert answer["error"]["code"] == -32050, answer
        assert "notes" in answer["error"]["message"] and "exited" in answer["error"]["message"], answer
    # The next call starts it again (after the backoff) and works.
    assert text_of(tool(gw, keys, "notes__echo", {"text": "again"})) == "notes echo: again"
    second = int(text_of(tool(gw, keys, "notes__pid")))
    assert second != first
    PIDS.update({first, second})
    # The other server was not touched; the gateway is unharmed.
    assert text_of(tool(gw, keys, "vault__echo", {"text": "ok"})) == "vault echo: ok"
    PIDS.add(int(text_of(tool(gw, keys, "vault__pid"))))


def test_the_admin_api_cannot_start_processes(gw, keys):
    with httpx.Client(base_url=gw.url, headers=auth(keys, "admin"), timeout=30) as a:
        r = a.post("/v1/admin/mcp/servers", json={"name": "evil", "command": ["/bin/sh", "-c", "id"],
                                                  "teams": ["t1"]})
        assert r.status_code == 400 and r.json()["error"]["param"] == "command", r.text
        servers = {s["name"]: s for s in a.get("/v1/admin/mcp/servers").json()["data"]}
        assert "evil" not in servers
        notes = servers["notes"]
        assert notes["transport"] == "stdio" and notes["url"] is None and notes["source"] == "config"
        assert notes["command"][-1] == "notes" and notes["credentials"] == ["env:NOTES_TOKEN"]
        assert "from-config" not in a.get("/v1/admin/mcp/servers").text


def test_prompts_and_resources_are_aggregated_by_team(gw, keys):
    prompts = listed(gw, keys, "prompts/list", "prompts", "name")
    assert {"notes__greet", "notes__leak", "vault__greet", "vault__leak"} == set(prompts), prompts
    resources = listed(gw, keys, "resources/list", "resources", "uri")
    assert {"notes+file:///readme.txt", "notes+file:///card.txt", "vault+file:///readme.txt"} <= set(resources)
    templates = listed(gw, keys, "resources/templates/list", "resourceTemplates", "uriTemplate")
    assert templates == ["notes+note://{id}", "vault+note://{id}"], templates
    # t2 is granted notes only.
    assert listed(gw, keys, "prompts/list", "prompts", "name", who="member2") == ["notes__greet", "notes__leak"]
    assert all(u.startswith("notes+") for u in listed(gw, keys, "resources/list", "resources", "uri", who="member2"))


def test_prompts_get_and_resources_read_route_back_to_their_server(gw, keys):
    before = harness.metrics(gw)
    r = post(gw, keys, "prompts/get", {"name": "vault__greet", "arguments": {"name": "Al"}}, name="vault__greet")
    assert r.json()["result"]["messages"][0]["content"]["text"] == "Hello Al, from vault", r.text
    r = post(gw, keys, "resources/read", {"uri": "notes+file:///readme.txt"}, name="notes+file:///readme.txt")
    assert r.json()["result"]["contents"][0]["text"] == "readme of notes", r.text
    r = post(gw, keys, "resources/read", {"uri": "vault+note://42"}, name="vault+note://42")
    assert r.json()["result"]["contents"][0]["text"] == "note 42 of vault", r.text
    # Not granted, or no such server, or no server part: one answer.
    for uri in ("vault+file:///readme.txt", "ghost+file:///a", "file:///readme.txt"):
        r = post(gw, keys, "resources/read", {"uri": uri}, who="member2", name=uri)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32602, r.text
    r = post(gw, keys, "prompts/get", {"name": "vault__greet", "arguments": {"name": "x"}}, who="member2",
             name="vault__greet")
    assert r.json()["error"]["code"] == -32602, r.text
    # Limits on the input.
    r = post(gw, keys, "prompts/get", {"name": "notes__greet", "arguments": {"name": 5}}, name="notes__greet")
    assert r.json()["error"]["code"] == -32602, r.text
    long = "notes+" + "x" * 3000
    r = post(gw, keys, "resources/read", {"uri": long}, name=long)
    assert r.json()["error"]["code"] == -32602, r.text
    # Reads are counted apart from tool calls: three answered, four refused (not permitted).
    after = harness.metrics(gw)
    grew = {n: after.get(n, 0) - before.get(n, 0) for n in (
        "sovereign_mcp_reads_total", "sovereign_mcp_reads_refused_total", "sovereign_mcp_reads_failed_total",
        "sovereign_mcp_tool_calls_total")}
    assert grew == {"sovereign_mcp_reads_total": 3, "sovereign_mcp_reads_refused_total": 4,
                    "sovereign_mcp_reads_failed_total": 0, "sovereign_mcp_tool_calls_total": 0}, grew


def test_the_guardrail_blocks_or_redacts_returned_texts(gw, keys):
    # t1: cards blocked; the refusal names the entity, never the text.
    for method, params, name in [("prompts/get", {"name": "notes__leak"}, "notes__leak"),
                                 ("resources/read", {"uri": "notes+file:///card.txt"}, "notes+file:///card.txt")]:
        r = post(gw, keys, method, params, name=name)
        assert "error" in r.json() and CARD not in r.text and "credit_card" in r.text, r.text
        # t2: redacted.
        r = post(gw, keys, method, params, who="member2", name=name)
        assert "result" in r.json() and CARD not in r.text and "notes" in r.text, r.text
    # A card in a prompt's argument is blocked for t1 before the server sees it.
    r = post(gw, keys, "prompts/get", {"name": "notes__greet", "arguments": {"name": CARD}}, name="notes__greet")
    assert "error" in r.json() and CARD not in r.text, r.text


def test_a_key_allowlist_narrows_prompts_and_resources_too(gw, keys):
    with httpx.Client(base_url=gw.url, headers=auth(keys, "admin"), timeout=30) as a:
        narrow = next(k["id"] for k in a.get("/v1/admin/keys").json()["data"] if k["name"] == "narrow")
        assert a.put(f"/v1/admin/mcp/keys/{narrow}", json={"tools": ["notes__echo", "vault__*"]}).status_code == 200
    assert listed(gw, keys, "prompts/list", "prompts", "name", who="narrow") == ["vault__greet", "vault__leak"]
    assert all(u.startswith("vault+") for u in listed(gw, keys, "resources/list", "resources", "uri", who="narrow"))
    r = post(gw, keys, "resources/read", {"uri": "notes+file:///readme.txt"}, who="narrow",
             name="notes+file:///readme.txt")
    assert r.json()["error"]["code"] == -32602, r.text


def test_the_official_client_reads_prompts_and_resources(gw, keys):
    async def run():
        http = create_mcp_http_client(headers=auth(keys))
        async with mcp_client.Client(streamable_http_client(f"{gw.url}/mcp", http_client=http), mode="legacy") as c:
            prompts = sorted(p.name for p in (await c.list_prompts()).prompts)
            assert "notes__greet" in prompts
            got = await c.get_prompt("notes__greet", {"name": "Bo"})
            SENT["prompts/get"] += 1
            assert got.messages[0].content.text == "Hello Bo, from notes"
            uris = sorted(str(r.uri) for r in (await c.list_resources()).resources)
            assert "vault+file:///readme.txt" in uris, uris
            read = await c.read_resource("vault+file:///readme.txt")
            SENT["resources/read"] += 1
            assert read.contents[0].text == "readme of vault"
            called = await c.call_tool("notes__echo", {"text": "sdk"})
            SENT["tools/call"] += 1
            assert called.content[0].text == "notes echo: sdk"

    asyncio.run(run())


def test_shutdown_kills_the_children_and_the_journal_holds_every_read(gw, keys):
    assert gw.stop() == 0

    def gone():
        alive = []
        for pid in PIDS:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        return not alive
    harness.wait_for(gone, timeout=10, what="the stdio servers' processes to end")

    rust, python = harness.verify_journal(harness.journal_dir(gw.directory))
    assert rust.returncode == 0, rust.stdout + rust.stderr
    assert python.returncode == 0, python.stdout + python.stderr
    entries = []
    for f in sorted(harness.journal_dir(gw.directory).glob("journal-*.jsonl")):
        entries += [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
    for method, n in SENT.items():
        got = [e for e in entries if e["action"] == f"mcp.{method}"]
        assert len(got) == n, (method, len(got), n)
        # Every entry records the read — but a message refused by its parameters' checks, before
        # any server was named (one of each in the limits test).
        recorded = [e for e in got if "mcp" in e]
        assert len(got) - len(recorded) == (0 if method == "tools/call" else 1)
        assert all(set(e["mcp"]) == {"server", "tool", "arguments_hash", "result_hash", "decision"}
                   for e in recorded)
    reads = [e for e in entries if e["action"] == "mcp.resources/read" and "mcp" in e]
    assert {"allow", "block", "redact", "not_permitted"} <= {e["mcp"]["decision"] for e in reads}
    ok = next(e for e in reads if e["mcp"]["server"] == "vault" and e["status"] == "success"
              and e["mcp"]["tool"].startswith("file:"))
    assert ok["mcp"]["tool"] == "file:///readme.txt" and ok["mcp"]["result_hash"].startswith("sha256:")
    raw = "".join(f.read_text() for f in harness.journal_dir(gw.directory).glob("journal-*.jsonl"))
    assert CARD not in raw and "readme of" not in raw and "Hello Al" not in raw
