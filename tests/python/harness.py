"""Starts the real `sovereign` binary (gateway, simulator, demo) for the Python test suites.

Every server is started on port 0 and announces itself on stdout with `listening on http://ADDR`
(`https://ADDR` when it serves TLS); the harness waits for that line (with a deadline, never a
fixed sleep) and reads any `key <name> <secret>` lines printed before it, and the `tls ca <path>`
line of `sovereign demo --tls`.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

import services

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("SOVEREIGN_BIN", REPO / "target" / "debug" / "sovereign"))
START_DEADLINE_S = 30.0

# The demo fleet as `sovereign simulate` serves it (host/src/simulator/fleet.rs).
FLEET = [
    dict(id="jais-30b-chat", family="jais", kind="chat", languages=["ar", "en"], region="sa-riyadh-1", local=True,
         input_cost_per_mtok=0.6, output_cost_per_mtok=1.8),
    dict(id="allam-7b-instruct", family="allam", kind="chat", languages=["ar", "en"], region="sa-riyadh-1", local=True,
         input_cost_per_mtok=0.2, output_cost_per_mtok=0.6),
    # Speaks the Messages API natively: `/v1/messages` requests go to the simulator's Messages door.
    dict(id="qwen2.5-coder-32b", family="qwen", kind="chat", languages=["en"], region="eu-frankfurt-1", local=False,
         input_cost_per_mtok=0.9, output_cost_per_mtok=0.9, messages="native"),
    dict(id="llama-3.2-3b-instruct", family="llama", kind="chat", languages=["en"], region="sa-riyadh-1", local=True,
         input_cost_per_mtok=0.05, output_cost_per_mtok=0.1),
    dict(id="magistral-small", family="mistral", kind="chat", languages=["fr", "en"], region="eu-paris-1", local=False,
         input_cost_per_mtok=0.5, output_cost_per_mtok=1.5),
    dict(id="multilingual-e5-small", family="e5", kind="embedding", languages=["ar", "en", "fr"], region="sa-riyadh-1", local=True,
         input_cost_per_mtok=0.02, output_cost_per_mtok=0.0),
]

REGION = {m["id"]: m["region"] for m in FLEET}

# The Messages API's tests: a card number the guardrail blocks (`GUARD_CARDS_BLOCKED`: cards
# blocked, every other entity redacted), and a client tool in the Messages shape.
CARD = "4111 1111 1111 1111"
GUARD_CARDS_BLOCKED = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})
WEATHER_TOOL = {"name": "get_weather", "description": "Current weather in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"]}}


def english_answer(model: str, question: str) -> str:
    """What an English-speaking simulated model answers to `question` (simulator/answer.rs)."""
    return f'Hello! I am {model}, served from region {REGION[model]}. You asked: "{question}".'


# Every process started, in order (conftest kills a test's own when the test ends).
STARTED: list["Proc"] = []


class Proc:
    """A started `sovereign` process."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None):
        self.args = args
        self.proc = subprocess.Popen(
            [str(BIN), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        STARTED.append(self)
        self.keys: dict[str, str] = {}
        # `sovereign demo --tls`: the demo CA's file, and its PEM as read at start (a test may
        # rewrite the file to exercise a reload; clients keep trusting the original).
        self.ca: Path | None = None
        self.ca_pem: str | None = None
        self.stderr_lines: list[str] = []
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc.stdout, lines.put, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr_lines.append, False),
                         daemon=True).start()
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise RuntimeError(f"sovereign {args} did not start in time: {self.stderr()}")
            if line is None:
                raise RuntimeError(f"sovereign {args} exited early: {self.stderr()}")
            parts = line.split()
            if parts[:1] == ["key"] and len(parts) == 3:
                self.keys[parts[1]] = parts[2]
            elif line.startswith("tls ca "):
                self.ca = Path(line.removeprefix("tls ca ").strip())
                self.ca_pem = self.ca.read_text()
            elif line.startswith("listening on "):
                self.url = line.removeprefix("listening on ").strip()
                break
        self._stdout_rest = lines

    @staticmethod
    def _pump(stream, put, mark_eof: bool):
        for line in stream:
            put(line.rstrip("\n"))
        if mark_eof:
            put(None)

    def stderr(self) -> str:
        return "\n".join(self.stderr_lines[-50:])

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait for a graceful exit; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_simulator(latency_ms: int = 0, token_interval_ms: int = 0) -> Proc:
    return Proc(["simulate", "--listen", "127.0.0.1:0", "--latency-ms", str(latency_ms),
                 "--token-interval-ms", str(token_interval_ms)])


def start_demo(data_dir: Path, tls: bool = False) -> Proc:
    """`sovereign demo`; with `tls`, HTTPS with optional client certificates and a demo PKI
    under `data_dir/tls/` (the process's `ca` / `ca_pem` are the CA clients should trust)."""
    return Proc(["demo", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir), *(["--tls"] if tls else [])],
                env=services.backend_env(data_dir))


def tls_context(ca_pem: str, cert: tuple[str | Path, str | Path] | None = None):
    """An `ssl.SSLContext` trusting `ca_pem` (PEM text), presenting `cert` = (cert file, key
    file) when given. Pass it as httpx's `verify=`: httpx 0.28 ignores `cert=` whenever `verify`
    is a path string, so the context is the one reliable way to present a client certificate."""
    import ssl

    ctx = ssl.create_default_context(cadata=ca_pem)
    if cert:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


def start_gateway(config_text: str, directory: Path, env: dict[str, str] | None = None) -> Proc:
    path = directory / "gateway.toml"
    path.write_text(config_text)
    # On `SOVEREIGN_TEST_BACKEND=postgres`, the directory's own database and Redis namespace
    # (a test's explicit `env` wins).
    return Proc(["serve", "--config", str(path)], env={**services.backend_env(directory), **(env or {})})


def new_key() -> tuple[str, str]:
    """A fresh (secret, config hash) pair from `sovereign keygen`."""
    out = subprocess.run([str(BIN), "keygen"], capture_output=True, text=True, check=True).stdout
    secret = out.splitlines()[0].split()[1]
    hash_ = out.splitlines()[1].split('"')[1]
    return secret, hash_


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


# The built-in rules router's document the routing tests use (the demo's routes, host/src/demo):
# Arabic → jais-30b-chat, French → magistral-small, short prompts → llama-3.2-3b-instruct, the
# rest → qwen2.5-coder-32b.
RULES_ROUTING = """\
name: test-rules
routes:
  - name: arabic
    condition: "language == 'ar'"
    model: jais-30b-chat
  - name: french
    condition: "language == 'fr'"
    model: magistral-small
  - name: small-prompts
    condition: "prompt_tokens < 500"
    model: llama-3.2-3b-instruct
default: qwen2.5-coder-32b
"""

# No request-rate limits (tests of the limits set their own).
UNLIMITED = """
[access]
ip_requests_per_minute = 0

[plans.enterprise]
requests_per_minute = 0
burst = 0
tokens_per_day = 0
"""


def gateway_config(
    models: list[dict],
    keys: dict[str, tuple[str, str]],
    default_model: str = "jais-30b-chat",
    server: dict | None = None,
    sovereign_id: str = "test-gw-1",
    region: str = "sa-riyadh-1",
    routing: dict | None = None,
    team_plan: str = "enterprise",
    extra: str = UNLIMITED,
    journal: dict | None = None,
) -> str:
    """Renders a gateway config. `models` are dicts of model fields (base_url included);
    `keys` maps a key name to (role, hash) or (role, hash, team) (team default `t1`);
    `journal` is the `[journal]` table. Config-file teams are on `team_plan`. `extra` is TOML
    appended as is: by default it lifts the request-rate limits, so tests that are not about
    limits never meet them."""
    lines = [f"sovereign_id = {toml_value(sovereign_id)}", f"region = {toml_value(region)}",
             f"default_model = {toml_value(default_model)}", "", "[server]",
             'listen = "127.0.0.1:0"']
    for k, v in (server or {}).items():
        lines.append(f"{k} = {toml_value(v)}")
    if routing:
        lines += ["", "[routing]"] + [f"{k} = {toml_value(v)}" for k, v in routing.items()]
    for m in models:
        lines += ["", "[[models]]"] + [f"{k} = {toml_value(v)}" for k, v in m.items()]
    if journal:
        lines += ["", "[journal]"] + [f"{k} = {toml_value(v)}" for k, v in journal.items()]
    teams = ["t1"] + sorted({k[2] for k in keys.values() if len(k) > 2} - {"t1"})
    for team in teams:
        lines += ["", "[[teams]]", f"id = {toml_value(team)}", f"plan = {toml_value(team_plan)}"]
    for name, (role, hash_, *team) in keys.items():
        lines += ["", "[[keys]]", f"name = {toml_value(name)}", f"team = {toml_value(team[0] if team else 't1')}",
                  f"role = {toml_value(role)}", f"hash = {toml_value(hash_)}"]
    return "\n".join(lines) + "\n" + extra


def journal_dir(directory: Path) -> Path:
    """Where a gateway started in `directory` keeps its journal by default (`data/journal`)."""
    return directory / "data" / "journal"


def verify_journal(directory: Path) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """`sovereign journal verify` and scripts/verify_journal.py on the same journal directory."""
    rust = subprocess.run([str(BIN), "journal", "verify", str(directory)], capture_output=True, text=True)
    python = subprocess.run(["python3", str(REPO / "scripts" / "verify_journal.py"), str(directory)],
                            capture_output=True, text=True)
    return rust, python


def fleet_models(sim_url: str, **overrides) -> list[dict]:
    """The demo fleet's models pointing at a simulator, with per-model field overrides."""
    return [{**m, "base_url": f"{sim_url}/v1", **overrides} for m in FLEET]


def sim_set(sim: Proc, model: str, **behaviour) -> None:
    """Changes a simulated model's behaviour (`model="*"` for all)."""
    httpx.put(f"{sim.url}/_sim/models/{model}", json=behaviour).raise_for_status()


def sim_reply(sim: Proc, model: str, text: str | None) -> None:
    """Makes a simulated model answer exactly `text` from now on (`None`: its usual answer again)."""
    httpx.put(f"{sim.url}/_sim/replies/{model}", json={"text": text}).raise_for_status()


def sim_stats(sim: Proc) -> dict:
    return httpx.get(f"{sim.url}/_sim/stats").json()


def sim_requests(sim: Proc) -> list[dict]:
    return httpx.get(f"{sim.url}/_sim/requests").json()


def sim_requests_since(sim: Proc, mark: int) -> list[dict]:
    """The requests the simulator received after `mark` (its `sim_stats(sim)["requests"]` taken
    earlier). The simulator keeps only its latest 64 requests, so slicing `sim_requests` by a length
    taken earlier is empty once that log is full; the total count keeps growing."""
    new = sim_stats(sim)["requests"] - mark
    return sim_requests(sim)[-new:] if new > 0 else []


def raises_anthropic_errors(cases) -> None:
    """Each `(call, SDK error class, Messages error type)`: the call raises the class, with a body in
    the Anthropic shape (`{"type": "error", "error": {"type", "message"}, "request_id"}`) whose id
    is the `request-id` header."""
    for call, cls, kind in cases:
        with pytest.raises(cls) as e:
            call()
        body = e.value.body
        assert body["type"] == "error" and body["error"]["type"] == kind, body
        assert body["error"]["message"] and body["request_id"].startswith("req-"), body
        assert e.value.response.headers["request-id"] == body["request_id"]


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02, what: str = "condition"):
    """Polls `predicate` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)



def journal_entries(admin_client, request_id: str) -> list[dict]:
    """The journal entries of one request (`POST /v1/activity/logs` as an admin or auditor),
    waited for: an entry is appended as the answer leaves."""
    def found():
        r = admin_client.post("/v1/activity/logs", json={"request_id": request_id})
        assert r.status_code == 200, r.text
        return r.json()["data"]
    return wait_for(found, what=f"the journal entry of {request_id}")


def metrics(gateway: Proc, verify=None) -> dict[str, float]:
    """The gateway's `/metrics` counters by name (no auth needed). Over HTTPS the demo CA the
    process announced is trusted unless `verify` says otherwise."""
    if verify is None:
        verify = tls_context(gateway.ca_pem) if gateway.ca_pem else True
    text = httpx.get(f"{gateway.url}/metrics", verify=verify).text
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            # `name value` or `name{labels} value` (a label value may hold spaces).
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def host_port(proc: Proc) -> tuple[str, int]:
    host, port = proc.url.removeprefix("http://").removeprefix("https://").rsplit(":", 1)
    return host, int(port)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def catches_signal(proc: Proc, signum: int) -> bool:
    """Whether the process has installed a handler for `signum` (Linux: SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{proc.proc.pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


class Receiver:
    """A webhook receiver inside the test: an HTTP server on a free loopback port that verifies
    every request's Standard Webhooks signature (stdlib HMAC, independent of the gateway's code),
    records what it got, and answers with the statuses `plan` gives (then 200)."""

    def __init__(self, tls: "ssl.SSLContext | None" = None):
        """`tls`: a server context (certificate, and client verification if it asks for it);
        the receiver then listens on `https://localhost:PORT/hook` and records each request's
        client certificate (`peer_cert`)."""
        import http.server

        self.received: list[dict] = []  # every request, in arrival order
        self.plan: list[int] = []  # statuses to answer next, consumed in order
        self.default_status = 200
        self.secret: str | None = None
        self.bad_signatures = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver.lock:
                    status = receiver.plan.pop(0) if receiver.plan else receiver.default_status
                    ok = receiver.verify(self.headers, body)
                    if not ok:
                        receiver.bad_signatures += 1
                    peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
                    receiver.received.append({"headers": dict(self.headers.items()), "body": body,
                                              "status": status, "signature_ok": ok, "peer_cert": peer})
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is None:
            self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        else:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://localhost:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def verify(self, headers, body: bytes) -> bool:
        import base64
        import hashlib
        import hmac

        if self.secret is None:
            return False
        key = base64.b64decode(self.secret.removeprefix("whsec_"))
        signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        given = [s.split(",", 1)[1] for s in headers.get("webhook-signature", "").split() if s.startswith("v1,")]
        fresh = abs(time.time() - int(headers["webhook-timestamp"])) < 300
        return fresh and any(hmac.compare_digest(expected, g) for g in given)

    def accepted(self) -> list[dict]:
        """Requests answered 2xx, in arrival order, bodies parsed."""
        import json

        with self.lock:
            return [{**r, "json": json.loads(r["body"])} for r in self.received if 200 <= r["status"] < 300]

    def close(self):
        self.server.shutdown()
