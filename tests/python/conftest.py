"""Fixtures: a simulated fleet, a gateway in front of it, and the official `openai` and
`anthropic` clients."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

import harness


@pytest.fixture(scope="session")
def keys():
    member, member_hash = harness.new_key()
    admin, admin_hash = harness.new_key()
    return {"member": member, "admin": admin,
            "config": {"member": ("member", member_hash), "admin": ("admin", admin_hash)}}


@pytest.fixture(scope="session")
def sim():
    p = harness.start_simulator()
    yield p
    p.kill()


@pytest.fixture(scope="session")
def gateway(sim, keys, tmp_path_factory):
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=2000, stream_idle_timeout_ms=2000),
        keys["config"],
        server={"header_read_timeout_ms": 1000, "body_read_timeout_ms": 2000, "max_body_bytes": 1048576},
    )
    p = harness.start_gateway(config, tmp_path_factory.mktemp("gw"))
    yield p
    p.kill()


@pytest.fixture(autouse=True)
def no_process_outlives_its_test():
    """Processes a test (or its function-scoped fixtures) started are killed when it ends, even
    when a failed assertion stopped it before its own kill; session and module fixtures' are
    started before this runs and are left alone. A failed restart test once left a gateway
    running for an hour and a half."""
    before = len(harness.STARTED)
    yield
    for p in harness.STARTED[before:]:
        p.kill()
    del harness.STARTED[before:]


@pytest.fixture(autouse=True)
def reset_sim(sim):
    """Every test starts with a well-behaved fleet."""
    harness.sim_set(sim, "*")
    yield


@pytest.fixture
def client(gateway, keys):
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)


@pytest.fixture
def claude(gateway, keys):
    """The official `anthropic` SDK as a coding agent configures it: the gateway's base URL and a
    key (sent as `x-api-key`)."""
    return anthropic.Anthropic(base_url=gateway.url, api_key=keys["member"], max_retries=0, timeout=20)


@pytest.fixture
def admin(gateway, keys):
    """Plain HTTP to the gateway as the admin key (modules with their own gateway may override)."""
    with httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {keys['admin']}"},
                      timeout=20) as c:
        yield c


@pytest.fixture
def http(gateway, keys):
    """Plain HTTP to the gateway, authenticated as the member key."""
    with httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {keys['member']}"},
                      timeout=20) as c:
        yield c


@pytest.fixture
def gateway_factory(keys, tmp_path):
    """Starts extra gateways with their own config (`models`, `server`); all killed at teardown."""
    started = []

    def start(models, server=None, **kwargs):
        directory = tmp_path / f"gw{len(started)}"
        directory.mkdir()
        p = harness.start_gateway(harness.gateway_config(models, keys["config"], server=server, **kwargs),
                                  directory)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
