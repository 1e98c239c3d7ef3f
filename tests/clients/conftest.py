"""Popular client libraries against the real binary in front of the simulated fleet, each on its
defaults and in its own environment (they pin incompatible `openai` versions): the OpenAI Agents
SDK, LlamaIndex's `OpenAILike`, LangChain's `langchain-openai`, the Vercel AI SDK; and in the
Anthropic Messages dialect (`/v1/messages`, issue 45) the `@anthropic-ai/sdk` TypeScript SDK,
LangChain's `ChatAnthropic`, the Vercel AI SDK's `@ai-sdk/anthropic` and Claude Code.

`scripts/setup-clients` installs them (one venv per Python library under `.venv-clients/`,
`npm ci` into `tests/clients/node_modules`). The tests here run in the main `.venv` (pytest,
httpx, the harness); each library runs in its own interpreter or in node, as a subprocess: a
small driver under `drivers/` that reads the gateway's base URL and key from `GATEWAY_URL` and
`GATEWAY_KEY` and prints one `RESULT {json}` line for the test to assert on.

Every library has its own team (and key), so the journal tells which endpoints a library called
(`action`: `responses.create`, `completions.create`, `chat.completions`, `embeddings`) without
touching the library's defaults. The Anthropic libraries reach the gateway through a `Recorder`
(client_harness.py), a pass-through proxy that keeps each exchange, so the tests can check every
stream they were sent against the Messages stream rules and see which routes they called.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from client_harness import Recorder, Upstream, harness, python_driver  # noqa: E402

# The guardrail as a site that refuses card numbers would run it: cards blocked, every other
# entity redacted (the guardrail's default).
GUARDRAIL = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})

LIBRARIES = ["agents", "llamaindex", "langchain", "vercel", "anthropic-ts", "langchain-anthropic",
             "vercel-anthropic", "claude-code", "mcp-ts"]


@pytest.fixture(scope="session")
def keys():
    """An admin key (reads the journal) and one member key per library, each in its own team."""
    out = {"config": {}}
    admin, admin_hash = harness.new_key()
    out["admin"] = admin
    out["config"]["admin"] = ("admin", admin_hash)
    for lib in LIBRARIES:
        secret, hash_ = harness.new_key()
        out[lib] = secret
        out["config"][lib] = ("member", hash_, lib)
    return out


@pytest.fixture(scope="session")
def sim():
    p = harness.start_simulator()
    yield p
    p.kill()


@pytest.fixture(scope="session")
def gateway(sim, keys, tmp_path_factory):
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=5000, stream_idle_timeout_ms=5000),
        keys["config"],
        extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(GUARDRAIL)}\n",
        journal={"enabled": True},
    )
    p = harness.start_gateway(config, tmp_path_factory.mktemp("gw"))
    yield p
    p.kill()


@pytest.fixture(scope="session")
def recorder(gateway):
    """The session gateway behind a recording proxy (the Anthropic libraries' base URL)."""
    r = Recorder(gateway.url)
    yield r
    r.close()


@pytest.fixture(autouse=True)
def reset_sim(sim):
    harness.sim_set(sim, "*")
    yield


@pytest.fixture
def upstream(sim):
    return Upstream(sim)


@pytest.fixture
def agents(gateway, keys):
    return python_driver(gateway, keys, "agents", "agents_driver.py")


@pytest.fixture
def llamaindex(gateway, keys):
    return python_driver(gateway, keys, "llamaindex", "llamaindex_driver.py")


@pytest.fixture
def langchain(gateway, keys):
    return python_driver(gateway, keys, "langchain", "langchain_driver.py")
