"""MCP clients against the gateway's `/mcp` (issue 46, docs/MCP.md "Pointing agents at it"): the
official TypeScript SDK (`@modelcontextprotocol/sdk`) and the OpenAI Agents SDK's
`MCPServerStreamableHttp` in an agent run whose model is the simulated fleet behind `/v1` — one
gateway key for the model and the tools, both in the journal.

The upstream MCP server is tests/python/mcp_stdio_server.py over stdio (`notes`, granted to the
two libraries' teams; `vault`, granted to neither), started by this module's own gateway."""

from __future__ import annotations

import json
import sys

import pytest

from client_harness import HERE, harness, node_driver, python_driver

SERVER = HERE.parent / "python" / "mcp_stdio_server.py"


@pytest.fixture(scope="module")
def mcp_gateway(sim, keys, tmp_path_factory):
    servers = "".join(f"""
[[mcp.servers]]
name = "{name}"
command = [{json.dumps(sys.executable)}, {json.dumps(str(SERVER))}, "{name}"]
teams = {json.dumps(teams)}
""" for name, teams in (("notes", ["agents", "mcp-ts"]), ("vault", ["nobody"])))
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=5000, stream_idle_timeout_ms=5000),
        keys["config"], extra=harness.UNLIMITED + servers, journal={"enabled": True})
    p = harness.start_gateway(config, tmp_path_factory.mktemp("gw-mcp"))
    yield p
    p.kill()


def test_the_typescript_sdk_lists_calls_and_reads_through_the_gateway(mcp_gateway, keys):
    driver = node_driver(mcp_gateway, keys, "mcp-ts", "mcp_ts_driver.mjs", package="@modelcontextprotocol/sdk")
    out = driver()
    # A 2025-era session, as this SDK opens one.
    assert out["session"] is True and out["protocol"] == "2025-11-25", out
    assert "notes__echo" in out["tools"] and not any(t.startswith("vault__") for t in out["tools"]), out
    assert out["called"] == "notes echo: from typescript", out
    assert out["prompts"] == ["notes__greet", "notes__leak"], out
    assert out["prompt"] == "Hello Ts, from notes", out
    assert "notes+file:///readme.txt" in out["resources"], out
    assert out["read"] == "readme of notes", out
    assert out["refused"] and out["refused"]["code"] == -32602, out
    actions = [e["action"] for e in driver.journal()]
    for action in ("mcp.initialize", "mcp.tools/list", "mcp.tools/call", "mcp.prompts/get", "mcp.resources/read"):
        assert action in actions, actions
    assert actions.count("mcp.tools/call") == 2, actions  # the call, and the refused one


def test_an_agents_sdk_agent_uses_the_gateway_for_model_and_tools(mcp_gateway, keys, upstream):
    driver = python_driver(mcp_gateway, keys, "agents", "agents_mcp_driver.py")
    with upstream:
        out = driver("qwen2.5-coder-32b")
    assert out["tools"][0] == "notes__echo", out
    # The simulated model called the first tool offered (the MCP tool) with its answer as `text`;
    # the tool's output came back through the gateway and into the final answer.
    assert out["items"] == ["tool_call_item", "tool_call_output_item", "message_output_item"], out
    assert "notes echo:" in out["final_output"], out
    entries = driver.journal()
    actions = [e["action"] for e in entries]
    assert actions.count("responses.create") == 2 and actions.count("mcp.tools/call") == 1, actions
    # One key for both, one journal.
    assert len({e["key_id"] for e in entries}) == 1, entries
    call = next(e for e in entries if e["action"] == "mcp.tools/call")
    assert call["status"] == "success" and call["mcp"]["server"] == "notes" and call["mcp"]["tool"] == "echo"
    # The model saw the MCP tool by its gateway name, and then the tool's output.
    chats = [r for r in upstream.requests if r["path"] == "/v1/chat/completions"]
    assert chats[0]["body"]["tools"][0]["function"]["name"] == "notes__echo", chats[0]["body"]
    assert "notes echo:" in json.dumps(chats[1]["body"]["messages"])
