"""Running a client library's driver against the gateway, and reading what it did (the
journal of its team, the requests that reached the simulated fleet). Used by conftest.py and
the tests; harness.py (tests/python) starts the processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


class Driver:
    """Runs one library's driver against the gateway, as that library's key (`GATEWAY_URL`,
    `GATEWAY_KEY`; `env` adds variables)."""

    def __init__(self, gateway, keys, lib: str, command: list[str]):
        self.gateway, self.keys, self.lib, self.command = gateway, keys, lib, command

    def __call__(self, *args: str, timeout: float = DRIVER_TIMEOUT_S, env: dict[str, str] | None = None) -> dict:
        extra_env = env
        env = {
            **os.environ,
            "GATEWAY_URL": f"{self.gateway.url}/v1",
            "GATEWAY_KEY": self.keys[self.lib],
            "TIKTOKEN_CACHE_DIR": str(TIKTOKEN_CACHE),
            "PYTHONUNBUFFERED": "1",
        }
        # What an outside environment may have set must not steer the libraries elsewhere.
        for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "VIRTUAL_ENV"):
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


def python_driver(gateway, keys, lib: str, script: str) -> Driver:
    python = VENVS / lib / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run scripts/setup-clients")
    return Driver(gateway, keys, lib, [str(python), str(HERE / "drivers" / script)])


def node_driver(gateway, keys) -> Driver:
    if not (HERE / "node_modules" / "ai").exists():
        pytest.fail(f"{HERE / 'node_modules'} is missing: run scripts/setup-clients")
    return Driver(gateway, keys, "vercel", ["node", str(HERE / "drivers" / "vercel_ai_driver.mjs")])
