"""The OpenAI Agents SDK with the gateway as both its model and its MCP server (issue 46,
tests/clients/test_client_mcp.py): `MCPServerStreamableHttp` pointed at `/mcp` and the default
`AsyncOpenAI` client at `/v1`, one gateway key for both, tracing off. The agent runs once; the
simulated model calls the first tool it is offered (an MCP tool) and answers with its output.
Prints `RESULT {json}`.

usage: agents_mcp_driver.py MODEL
"""

import asyncio
import json
import os
import sys

from openai import AsyncOpenAI

from agents import Agent, Runner, set_default_openai_client, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp


async def main(model: str) -> dict:
    url, key = os.environ["GATEWAY_URL"], os.environ["GATEWAY_KEY"]
    set_tracing_disabled(True)
    set_default_openai_client(AsyncOpenAI(base_url=url, api_key=key))
    base = url.removesuffix("/").removesuffix("/v1")
    # The first request starts the stdio upstream behind the gateway: more than the 5 s default.
    params = {"url": f"{base}/mcp", "headers": {"Authorization": f"Bearer {key}"}, "timeout": 30}
    async with MCPServerStreamableHttp(params=params, name="gateway", cache_tools_list=True) as server:
        tools = [t.name for t in await server.list_tools()]
        agent = Agent(name="clerk", instructions="Answer with the tool's help.", model=model,
                      mcp_servers=[server])
        result = await Runner.run(agent, "Where is my order?")
    return {
        "tools": tools,
        "items": [item.type for item in result.new_items],
        "final_output": result.final_output,
    }


if __name__ == "__main__":
    print("RESULT " + json.dumps(asyncio.run(main(sys.argv[1]))), flush=True)
