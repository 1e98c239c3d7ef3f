"""Issue 46: the MCP servers and key allowlists written through the admin API are a stored resource
(docs/MCP.md, "Where servers and allowlists live"). Through the real binary: a server and a key's
allowlist survive a restart of the gateway (its credentials with it: the upstream refuses a call
without them); a server edited in place keeps the credentials the edit does not name, and takes
new ones at once; on two replicas on PostgreSQL + Redis, a server registered on one is listed and
callable on the other, an edit and a revoked allowlist entry take effect there without a restart, and
a deletion removes the server everywhere. The upstreams are test_mcp.py's FastMCP servers."""

from __future__ import annotations

import httpx
import pytest

import harness
import services
from test_mcp import Upstream

pytest.importorskip("mcp.client.client")

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
ARGS = {"files__read": {"path": "/etc/motd"}, "files__remove": {"path": "/tmp/x"}, "files__purge": {},
        "records__echo": {"text": "hi"}}


@pytest.fixture(scope="module")
def upstreams():
    ups = {k: Upstream(k) for k in ("records", "files")}
    yield ups
    for u in ups.values():
        u.kill()


@pytest.fixture(scope="module")
def mkeys():
    made = {name: harness.new_key() for name in ("admin", "member", "narrow")}
    return {"secret": {n: k[0] for n, k in made.items()},
            "config": {"admin": ("admin", made["admin"][1]), "member": ("member", made["member"][1]),
                       "narrow": ("member", made["narrow"][1])}}


def mcp_config(upstreams) -> str:
    return harness.UNLIMITED + f"""
[mcp]
allow_loopback = true
call_timeout_ms = 5000

[[mcp.servers]]
name = "records"
url = "{upstreams['records'].url}"
teams = ["t1"]
bearer = "records-secret"
"""


def admin(gw, mkeys) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {mkeys['secret']['admin']}"}, timeout=30)


def rpc(gw, mkeys, who, method, params=None, name=None) -> dict:
    h = {"Authorization": f"Bearer {mkeys['secret'][who]}", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": META}}
    return httpx.post(f"{gw.url}/mcp", headers=h, json=body, timeout=30).json()


def listed(gw, mkeys, who) -> set[str]:
    return {t["name"] for t in rpc(gw, mkeys, who, "tools/list")["result"]["tools"]}


def call(gw, mkeys, who, name) -> dict:
    return rpc(gw, mkeys, who, "tools/call", {"name": name, "arguments": ARGS.get(name, {})}, name=name)


def callable_(body: dict) -> bool:
    """A result (the upstream answered): callable. `-32602 Unknown tool`: not for this caller."""
    if "result" in body:
        return True
    assert body["error"]["code"] == -32602, body
    return False


def key_id(a: httpx.Client, name: str) -> str:
    return next(k["id"] for k in a.get("/v1/admin/keys").json()["data"] if k["name"] == name)


FILES = {"name": "files", "teams": ["t1"], "tools": {"t1": ["read", "remove"]}, "headers": {"X-Api-Key": "files-key"}}


def test_a_server_and_an_allowlist_survive_a_restart(upstreams, mkeys, tmp_path):
    config = harness.gateway_config(harness.fleet_models("http://127.0.0.1:9"), mkeys["config"],
                                    extra=mcp_config(upstreams))
    gw = harness.start_gateway(config, tmp_path)
    with admin(gw, mkeys) as a:
        r = a.post("/v1/admin/mcp/servers", json={**FILES, "url": upstreams["files"].url})
        assert r.status_code == 201, r.text
        narrow = key_id(a, "narrow")
        r = a.put(f"/v1/admin/mcp/keys/{narrow}", json={"tools": ["files__read"]})
        assert r.status_code == 200, r.text
        # Bad input is a 400 in the error shape, and changes nothing.
        r = a.put(f"/v1/admin/mcp/keys/{narrow}", json={"tools": ["no-separator"]})
        assert r.status_code == 400 and r.json()["error"]["param"] == "tools", r.text
        # The config file's server is read-only, and its name cannot be taken.
        r = a.post("/v1/admin/mcp/servers", json={"name": "records", "url": upstreams["files"].url, "teams": ["t1"]})
        assert r.status_code == 409, r.text
    assert listed(gw, mkeys, "narrow") == {"files__read"}
    gw.stop()

    gw = harness.start_gateway(config, tmp_path)
    with admin(gw, mkeys) as a:
        servers = {s["name"]: s for s in a.get("/v1/admin/mcp/servers").json()["data"]}
        assert servers["records"]["source"] == "config"
        files = servers["files"]
        assert files["source"] == "api" and files["teams"] == ["t1"] and files["tools"] == {"t1": ["read", "remove"]}
        assert files["credentials"] == ["header:x-api-key"]
        assert "files-key" not in a.get("/v1/admin/mcp/servers").text
        assert a.get(f"/v1/admin/mcp/keys/{narrow}").json()["tools"] == ["files__read"]
    assert listed(gw, mkeys, "narrow") == {"files__read"}
    assert listed(gw, mkeys, "member") >= {"files__read", "files__remove", "records__echo"}
    # The stored header went upstream (the files server refuses a call without it).
    out = call(gw, mkeys, "narrow", "files__read")
    assert out["result"]["content"][0]["text"] == "contents of /etc/motd", out
    assert not callable_(call(gw, mkeys, "narrow", "files__remove"))
    assert not callable_(call(gw, mkeys, "member", "files__purge"))

    with admin(gw, mkeys) as a:
        assert a.delete("/v1/admin/mcp/servers/files").status_code == 200
        assert a.delete(f"/v1/admin/mcp/keys/{narrow}").json()["deleted"] is True
    gw.stop()
    gw = harness.start_gateway(config, tmp_path)
    with admin(gw, mkeys) as a:
        assert [s["name"] for s in a.get("/v1/admin/mcp/servers").json()["data"]] == ["records"]
        assert a.get(f"/v1/admin/mcp/keys/{narrow}").json()["tools"] is None
    assert "records__echo" in listed(gw, mkeys, "narrow")
    assert not callable_(call(gw, mkeys, "member", "files__read"))
    gw.kill()


def test_a_server_is_edited_in_place(upstreams, mkeys, tmp_path):
    config = harness.gateway_config(harness.fleet_models("http://127.0.0.1:9"), mkeys["config"],
                                    extra=mcp_config(upstreams))
    gw = harness.start_gateway(config, tmp_path)
    with admin(gw, mkeys) as a:
        assert a.post("/v1/admin/mcp/servers", json={**FILES, "url": upstreams["files"].url}).status_code == 201
        assert callable_(call(gw, mkeys, "member", "files__remove"))
        # The fields given replace the server's; its credentials, not named, are kept.
        r = a.patch("/v1/admin/mcp/servers/files", json={"tools": {"t1": ["read"]}})
        assert r.status_code == 200, r.text
        assert r.json()["tools"] == {"t1": ["read"]} and r.json()["credentials"] == ["header:x-api-key"], r.text
        assert not callable_(call(gw, mkeys, "member", "files__remove"))
        out = call(gw, mkeys, "member", "files__read")
        assert out["result"]["content"][0]["text"] == "contents of /etc/motd", out
        # Bad edits are 4xx in the error shape and change nothing.
        for body, status, param in (({"name": "other"}, 400, "name"), ({"colour": "red"}, 400, "body"),
                                    ({"command": ["/bin/sh"]}, 400, "command"), ({"teams": ["t_none"]}, 400, None),
                                    ({"url": "ftp://example.com/mcp"}, 400, "url")):
            r = a.patch("/v1/admin/mcp/servers/files", json=body)
            assert r.status_code == status and "error" in r.json(), (body, r.text)
            if param:
                assert r.json()["error"]["param"] == param, (body, r.text)
        assert a.patch("/v1/admin/mcp/servers/records", json={"teams": ["t1"]}).status_code == 409
        assert a.patch("/v1/admin/mcp/servers/ghost", json={"teams": ["t1"]}).status_code == 404
        assert a.get("/v1/admin/mcp/servers/files").json()["tools"] == {"t1": ["read"]}
        # New credentials take effect at once: the upstream's sessions are rebuilt with them.
        r = a.patch("/v1/admin/mcp/servers/files", json={"headers": {"X-Api-Key": "wrong"}})
        assert r.status_code == 200, r.text
        assert "result" not in call(gw, mkeys, "member", "files__read")
        assert a.patch("/v1/admin/mcp/servers/files", json={"headers": {"X-Api-Key": "files-key"}}).status_code == 200
    gw.stop()
    # The edit was stored.
    gw = harness.start_gateway(config, tmp_path)
    with admin(gw, mkeys) as a:
        assert a.get("/v1/admin/mcp/servers/files").json()["tools"] == {"t1": ["read"]}
    assert callable_(call(gw, mkeys, "member", "files__read"))
    assert not callable_(call(gw, mkeys, "member", "files__remove"))
    gw.kill()


@pytest.fixture(scope="module")
def pg():
    p = services.PrivatePostgres()
    yield p
    p.close()


@pytest.fixture(scope="module")
def redis_server():
    r = services.PrivateRedis()
    yield r
    r.close()


def test_two_replicas_share_servers_and_allowlists_without_a_restart(sim, upstreams, mkeys, pg, redis_server,
                                                                     tmp_path):
    from test_replicas import start_replicas, stop_all
    a_, b_ = replicas = start_replicas(sim, mkeys, pg, redis_server, tmp_path, "mcpstore",
                                       extra=mcp_config(upstreams).removeprefix(harness.UNLIMITED))
    try:
        with admin(a_, mkeys) as a, admin(b_, mkeys) as b:
            r = a.post("/v1/admin/mcp/servers", json={**FILES, "url": upstreams["files"].url})
            assert r.status_code == 201, r.text
            # Registered on A: listed and callable on B.
            harness.wait_for(lambda: "files__read" in listed(b_, mkeys, "member"), what="B lists A's server")
            assert [s["name"] for s in b.get("/v1/admin/mcp/servers").json()["data"]] == ["files", "records"]
            assert callable_(call(b_, mkeys, "member", "files__remove"))
            # The store decides a name taken on another replica.
            r = b.post("/v1/admin/mcp/servers", json={**FILES, "url": upstreams["files"].url})
            assert r.status_code == 409 and r.json()["error"]["code"] == "mcp_server_exists", r.text

            narrow = key_id(a, "narrow")
            assert a.put(f"/v1/admin/mcp/keys/{narrow}", json={"tools": ["files__*"]}).status_code == 200
            harness.wait_for(lambda: listed(b_, mkeys, "narrow") == {"files__read", "files__remove"},
                             what="B follows the allowlist")
            assert callable_(call(b_, mkeys, "narrow", "files__remove"))
            # files__remove revoked on A: B refuses it without a restart, and keeps files__read.
            assert a.put(f"/v1/admin/mcp/keys/{narrow}", json={"tools": ["files__read"]}).status_code == 200
            harness.wait_for(lambda: not callable_(call(b_, mkeys, "narrow", "files__remove")),
                             what="B refuses the revoked tool")
            assert listed(b_, mkeys, "narrow") == {"files__read"}
            assert callable_(call(b_, mkeys, "narrow", "files__read"))
            assert b.get(f"/v1/admin/mcp/keys/{narrow}").json()["tools"] == ["files__read"]

            # Edited on A: B follows without a restart.
            r = a.patch("/v1/admin/mcp/servers/files", json={"tools": {"t1": ["read"]}})
            assert r.status_code == 200, r.text
            harness.wait_for(lambda: "files__remove" not in listed(b_, mkeys, "member"), what="B follows the edit")
            assert not callable_(call(b_, mkeys, "member", "files__remove"))
            assert callable_(call(b_, mkeys, "member", "files__read"))

            # Deleted on B: gone on both.
            assert b.delete("/v1/admin/mcp/servers/files").status_code == 200
            for gw in (a_, b_):
                harness.wait_for(lambda gw=gw: not callable_(call(gw, mkeys, "member", "files__read")),
                                 what="the server gone")
                assert "files__read" not in listed(gw, mkeys, "member")
            assert [s["name"] for s in a.get("/v1/admin/mcp/servers").json()["data"]] == ["records"]
            assert a.delete("/v1/admin/mcp/servers/files").status_code == 404
    finally:
        stop_all(replicas)
