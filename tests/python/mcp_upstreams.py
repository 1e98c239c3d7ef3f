"""Upstream MCP servers for tests/python/test_mcp.py, run as their own processes:

    python mcp_upstreams.py records PORT   # FastMCP over Streamable HTTP, wants `Bearer records-secret`
    python mcp_upstreams.py files PORT     # FastMCP over Streamable HTTP, wants header `X-Api-Key: files-key`
    python mcp_upstreams.py broken PORT    # a hand-written server whose tools/call answers garbage

Each prints `ready` once it listens. The FastMCP ones refuse (401) a request without the
credential the gateway holds for them, and record every Authorization header they saw
(`GET /seen`), so a test can check the caller's own key never reaches them.
"""

from __future__ import annotations

import asyncio
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CARD = "4111 1111 1111 1111"


def fastmcp_app(name: str, check):
    from fastmcp import FastMCP
    from starlette.responses import JSONResponse, PlainTextResponse

    server = FastMCP(name)
    seen: list[str] = []

    if name == "records":
        @server.tool
        def echo(text: str) -> str:
            """Echoes the text."""
            return f"records echo: {text}"

        @server.tool
        def lookup(customer: str) -> str:
            """A customer's record, card number included."""
            return f"customer {customer} pays with card {CARD}"

        @server.tool
        async def slow(seconds: float) -> str:
            """Answers after `seconds`."""
            await asyncio.sleep(seconds)
            return "late"

        @server.tool
        def team_of(team: str) -> str:
            """Says back which team asked (the caller passes it)."""
            return f"answer for {team}"
    else:
        @server.tool
        def read(path: str) -> str:
            """Reads a file."""
            return f"contents of {path}"

        @server.tool
        def remove(path: str) -> str:
            """Removes a file."""
            return f"removed {path}"

        @server.tool
        def purge() -> str:
            """Removes every file (no team's list names it)."""
            return "purged"

    app = server.http_app(path="/mcp")

    async def guard(scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if scope["path"] == "/seen":
                await JSONResponse(seen)(scope, receive, send)
                return
            seen.append(headers.get("authorization", ""))
            if not check(headers):
                await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                return
        await app(scope, receive, send)

    return guard, app


class Broken(BaseHTTPRequestHandler):
    """Speaks just enough 2025-11-25 to list a tool, then answers its call with garbage. Counts
    the methods it was sent (`GET /count`), so a test can see its session is reused."""

    counts: dict[str, int] = {}

    def do_GET(self):  # noqa: N802 (http.server's naming)
        raw = json.dumps(Broken.counts).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        method, rid = body.get("method"), body.get("id")
        Broken.counts[method] = Broken.counts.get(method, 0) + 1
        if rid is None:
            self.send_response(202)
            self.end_headers()
            return
        if method == "initialize":
            out = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "broken", "version": "0"}}
        elif method == "tools/list":
            out = {"tools": [{"name": "garbage", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            raw = b"<html>this is not JSON-RPC</html>"
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        else:
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        raw = json.dumps({"jsonrpc": "2.0", "id": rid, "result": out}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("mcp-session-id", "broken-session")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


def main():
    kind, port = sys.argv[1], int(sys.argv[2])
    if kind == "broken":
        server = ThreadingHTTPServer(("127.0.0.1", port), Broken)
        print("ready", flush=True)
        server.serve_forever()
        return
    import uvicorn

    checks = {
        "records": lambda h: h.get("authorization") == "Bearer records-secret",
        "files": lambda h: h.get("x-api-key") == "files-key",
    }
    guard, app = fastmcp_app(kind, checks[kind])

    # The FastMCP app's lifespan (its session manager) runs; requests go through the guard.
    async def lifespan_app(scope, receive, send):
        if scope["type"] == "lifespan":
            await app(scope, receive, send)
        else:
            await guard(scope, receive, send)

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            print("ready", flush=True)

    Server(uvicorn.Config(lifespan_app, host="127.0.0.1", port=port, log_level="warning",
                          lifespan="on")).run()


if __name__ == "__main__":
    main()
