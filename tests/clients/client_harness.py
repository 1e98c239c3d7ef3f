"""Running a client library's driver against the gateway, and reading what it did (the
journal of its team, the requests that reached the simulated fleet). Used by conftest.py and
the tests; harness.py (tests/python) starts the processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import harness  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENVS = Path(os.environ.get("SOVEREIGN_CLIENT_VENVS", REPO / ".venv-clients"))
# cl100k_base, where tiktoken looks for it first (TIKTOKEN_CACHE_DIR): put there by
# scripts/setup-clients, as an air-gapped site does, since tiktoken would download it at run time.
TIKTOKEN_CACHE = VENVS / "tiktoken-cache"
DRIVER_TIMEOUT_S = 120


def journal(gateway, keys, team: str) -> list[dict]:
    """The journal's entries for one library's team, oldest first."""
    r = httpx.post(f"{gateway.url}/v1/activity/logs", headers={"Authorization": f"Bearer {keys['admin']}"},
                   json={"team_id": team, "limit": 1000}, timeout=20)
    r.raise_for_status()
    return sorted(r.json()["data"], key=lambda e: e["seq"])


class Upstream:
    """What reached the simulated fleet while a block ran (its request log keeps the last 64)."""

    def __init__(self, sim):
        self.sim = sim

    def __enter__(self):
        self.before = harness.sim_stats(self.sim)["requests"]
        self.requests: list[dict] = []
        return self

    def __exit__(self, *exc):
        new = harness.sim_stats(self.sim)["requests"] - self.before
        assert new <= 64, "more upstream requests than the simulator's log keeps"
        self.requests = harness.sim_requests(self.sim)[-new:] if new else []


# Hop-by-hop headers, and what the recorder sets itself.
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection",
       "content-length", "host", "accept-encoding"}


class Recorder:
    """A pass-through proxy in front of the gateway that keeps what a client sent and got back:
    each exchange's method, path (with its query), request headers and body, status, response
    headers and bytes. The client talks to the real gateway through it, nothing changed on the
    way (but `accept-encoding`, so the bytes kept are the ones the gateway wrote); each response
    is streamed back as it arrives and ends with the connection."""

    def __init__(self, target: str):
        self.target = target
        self.exchanges: list[dict] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def forward(self):
                recorder._forward(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def _body(h) -> bytes:
        if "chunked" in h.headers.get("transfer-encoding", "").lower():
            out = b""
            while size := int(h.rfile.readline().split(b";")[0].strip() or b"0", 16):
                out += h.rfile.read(size)
                h.rfile.readline()
            while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return out
        length = int(h.headers.get("content-length") or 0)
        return h.rfile.read(length) if length else b""

    def _forward(self, h):
        body = self._body(h)
        exchange = {"method": h.command, "path": h.path, "headers": {k.lower(): v for k, v in h.headers.items()},
                    "body": body, "status": None, "response_headers": {}, "response": b""}
        self.exchanges.append(exchange)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP}
        try:
            with httpx.Client(timeout=60) as c, c.stream(h.command, self.target + h.path, headers=headers,
                                                         content=body) as r:
                exchange["status"] = r.status_code
                exchange["response_headers"] = {k.lower(): v for k, v in r.headers.items()}
                h.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in HOP:
                        h.send_header(k, v)
                h.send_header("connection", "close")
                h.end_headers()
                for chunk in r.iter_raw():
                    exchange["response"] += chunk
                    h.wfile.write(chunk)
                    h.wfile.flush()
        except (httpx.HTTPError, OSError) as e:
            exchange["error"] = repr(e)

    def since(self, mark: int) -> list[dict]:
        return self.exchanges[mark:]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def sse_events(raw: bytes) -> list[tuple[str, dict]]:
    """A recorded event stream's named events, in order."""
    events, name = [], None
    for line in raw.decode().splitlines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: "):])))
    return events


def streamed(exchanges: list[dict]) -> list[list[tuple[str, dict]]]:
    """The event streams among `exchanges` (answers of type text/event-stream)."""
    return [sse_events(e["response"]) for e in exchanges
            if e["response_headers"].get("content-type", "").startswith("text/event-stream")]


class Driver:
    """Runs one library's driver against the gateway, as that library's key (`GATEWAY_URL`,
    `GATEWAY_KEY`; `env` adds variables). `url`: what `GATEWAY_URL` is (default the gateway's
    `/v1`; the Anthropic libraries get a recorder's root)."""

    def __init__(self, gateway, keys, lib: str, command: list[str], url: str | None = None):
        self.gateway, self.keys, self.lib, self.command = gateway, keys, lib, command
        self.url = url or f"{gateway.url}/v1"

    def __call__(self, *args: str, timeout: float = DRIVER_TIMEOUT_S, env: dict[str, str] | None = None) -> dict:
        extra_env = env
        env = {
            **os.environ,
            "GATEWAY_URL": self.url,
            "GATEWAY_KEY": self.keys[self.lib],
            "TIKTOKEN_CACHE_DIR": str(TIKTOKEN_CACHE),
            "PYTHONUNBUFFERED": "1",
        }
        # What an outside environment may have set must not steer the libraries elsewhere.
        for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "VIRTUAL_ENV", "ANTHROPIC_BASE_URL",
                     "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
            env.pop(name, None)
        # scripts/setup-clients installs without compiling (most of a library is never imported
        # here); the first run compiles what the driver imports, and later runs reuse it.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(extra_env or {})
        before = journal(self.gateway, self.keys, self.lib)
        self.mark = before[-1]["seq"] if before else 0
        try:
            done = subprocess.run([*self.command, *args], capture_output=True, text=True, timeout=timeout,
                                  env=env, cwd=HERE)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"{self.lib} driver {args} timed out; stderr:\n{e.stderr}") from None
        results = [line.removeprefix("RESULT ") for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        assert done.returncode == 0 and results, (
            f"{self.lib} driver {args} exited {done.returncode}\nstdout:\n{done.stdout[-4000:]}\n"
            f"stderr:\n{done.stderr[-6000:]}\ngateway stderr:\n{self.gateway.stderr()}")
        return json.loads(results[-1])

    def journal(self) -> list[dict]:
        """This library's journal entries since the last run started."""
        return [e for e in journal(self.gateway, self.keys, self.lib) if e["seq"] > self.mark]


def python_driver(gateway, keys, lib: str, script: str, url: str | None = None) -> Driver:
    python = VENVS / lib / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run scripts/setup-clients")
    return Driver(gateway, keys, lib, [str(python), str(HERE / "drivers" / script)], url)


def node_driver(gateway, keys, lib: str = "vercel", script: str = "vercel_ai_driver.mjs", package: str = "ai",
                url: str | None = None) -> Driver:
    if not (HERE / "node_modules" / package).exists():
        pytest.fail(f"{HERE / 'node_modules' / package} is missing: run scripts/setup-clients")
    return Driver(gateway, keys, lib, ["node", str(HERE / "drivers" / script)], url)


def recorded_run(driver: Driver, recorder: Recorder, *args: str) -> tuple[dict, list[dict], list[dict]]:
    """Runs a driver through `recorder`: its report, its new journal entries, the exchanges it made."""
    mark = len(recorder.exchanges)
    out = driver(*args)
    return out, driver.journal(), recorder.since(mark)


# The Vercel AI SDK's scenarios (drivers/ai_sdk_scenarios.mjs), asserted the same for both providers.
ORDER_RESULT = "Order SOV-4417 ships on Tuesday."


def assert_ai_sdk_usage(usage: dict):
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0, usage
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"], usage


def assert_ai_sdk_tool_loop(r: dict):
    """A tool loop: two steps, the tool called once with the model's arguments, its result answered."""
    assert "error" not in r, r
    assert r["steps"] == 2 and len(r["calls"]) == 1 and "Where is my order?" in r["calls"][0], r
    assert ORDER_RESULT in r["text"] and r["finishReason"] == "stop", r
    assert_ai_sdk_usage(r["usage"])
