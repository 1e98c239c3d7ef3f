// The official TypeScript MCP SDK (@modelcontextprotocol/sdk) against the gateway's `/mcp`
// (issue 46, tests/clients/test_client_mcp.py): a Streamable HTTP client with the gateway key in
// its headers lists and calls tools, lists and gets prompts, lists and reads resources, then
// calls a tool it may not use. Prints `RESULT {json}`.
//
// GATEWAY_URL is the gateway's `/v1`; `/mcp` is beside it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const base = process.env.GATEWAY_URL.replace(/\/v1\/?$/, "");
const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.GATEWAY_KEY}` } },
});
const client = new Client({ name: "sovereign-ts-test", version: "1.0.0" });
await client.connect(transport);

const tools = (await client.listTools()).tools.map((t) => t.name);
const called = await client.callTool({ name: "notes__echo", arguments: { text: "from typescript" } });
const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
const prompt = await client.getPrompt({ name: "notes__greet", arguments: { name: "Ts" } });
const resources = (await client.listResources()).resources.map((r) => r.uri);
const read = await client.readResource({ uri: "notes+file:///readme.txt" });
let refused = null;
try {
  await client.callTool({ name: "vault__echo", arguments: { text: "x" } });
} catch (e) {
  refused = { code: e.code, message: e.message };
}
const session = Boolean(transport.sessionId);
const protocol = transport.protocolVersion ?? null;
await transport.terminateSession().catch(() => {});
await client.close();

console.log(
  "RESULT " +
    JSON.stringify({
      protocol,
      session,
      tools,
      called: called.content[0].text,
      prompts,
      prompt: prompt.messages[0].content.text,
      resources,
      read: read.contents[0].text,
      refused,
    }),
);
