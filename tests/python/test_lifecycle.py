"""Process lifecycle: health and metrics without a key, graceful shutdown on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import time

import httpx
import openai

import harness
import services


def test_healthz_needs_no_key(gateway):
    r = httpx.get(f"{gateway.url}/healthz")
    assert r.status_code == 200
    assert r.text == "ok"
    assert r.headers["x-sovereign-id"] == "test-gw-1"


def test_metrics_need_no_key_and_count_requests(gateway):
    before = harness.metrics(gateway)
    for name in ("sovereign_requests_total", "sovereign_streams_active", "sovereign_streams_client_gone_total",
                 "sovereign_streams_completed_total", "sovereign_upstream_errors_total"):
        assert name in before
    httpx.get(f"{gateway.url}/healthz")
    after = harness.metrics(gateway)
    # The /healthz request and the first /metrics request.
    assert after["sovereign_requests_total"] == before["sovereign_requests_total"] + 2
    assert httpx.get(f"{gateway.url}/metrics").headers["content-type"].startswith("text/plain")


def _refuses_connections(proc: harness.Proc) -> bool:
    try:
        socket.create_connection(harness.host_port(proc), timeout=1).close()
    except (ConnectionRefusedError, ConnectionResetError):
        # Reset: the connection was in the closing listener's backlog.
        return True
    return False


def test_sigterm_drains_in_flight_stream_then_exits_0(gateway_factory, sim, keys):
    harness.sim_set(sim, "magistral-small", token_interval_ms=100)  # ~20 frames: ~2 s of stream
    gw = gateway_factory(harness.fleet_models(sim.url), server={"shutdown_grace_ms": 15000})
    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)
    stream = client.chat.completions.create(
        model="magistral-small", stream=True, messages=[{"role": "user", "content": "une longue histoire"}])
    chunks = iter(stream.response.iter_lines())
    lines = [next(chunks)]
    assert lines[0].startswith("data: {"), lines

    gw.proc.send_signal(signal.SIGTERM)
    started_shutdown = time.monotonic()
    # Shutdown has begun: new connections are refused while the stream is still being served.
    harness.wait_for(lambda: _refuses_connections(gw), timeout=5, what="the listener to close")
    assert gw.proc.poll() is None, "the gateway exited with a stream in flight"

    lines += list(chunks)
    data = [line for line in lines if line.startswith("data: ")]
    assert data[-1] == "data: [DONE]", data[-3:]
    assert not any('"error"' in line for line in data)
    text = "".join(json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                   for line in data[:-1])
    assert text.startswith("Bonjour") and text.endswith("».")
    assert time.monotonic() - started_shutdown >= 0.5, "the stream should have outlived the signal"

    assert gw.stop(timeout=10) == 0, gw.stderr()


def test_sigterm_when_idle_exits_0_promptly(gateway_factory, sim):
    gw = gateway_factory(harness.fleet_models(sim.url))
    assert httpx.get(f"{gw.url}/healthz").status_code == 200
    start = time.monotonic()
    assert gw.stop(timeout=10) == 0, gw.stderr()
    assert time.monotonic() - start < 3


def test_sigterm_right_after_readiness_is_graceful(gateway_factory, sim):
    """Once the gateway says `listening on`, SIGTERM must mean a graceful exit (code 0), not death
    by the signal's default action: a supervisor may stop a gateway the moment it is up."""
    gw = gateway_factory(harness.fleet_models(sim.url))
    handler_installed = harness.catches_signal(gw, signal.SIGTERM)
    gw.proc.send_signal(signal.SIGTERM)
    code = gw.proc.wait(timeout=10)
    assert code == 0, (f"exit status {code} (negative: killed by signal {-code}); "
                       f"SIGTERM handler installed at readiness: {handler_installed}")


def _mode(path) -> int:
    return path.stat().st_mode & 0o777


def test_the_data_directory_is_0700_and_the_store_0600(sim, keys, tmp_path):
    """Issue 49, red team: `sovereign.db` (webhook signing secrets, key hashes) was created 0644
    in a 0755 directory. A new data directory is 0700 and the database files 0600; one left
    readable by an earlier version is tightened at start."""
    config = harness.gateway_config(harness.fleet_models(sim.url), keys["config"])
    data = tmp_path / "data"
    p = harness.start_gateway(config, tmp_path)
    # On PostgreSQL (`SOVEREIGN_TEST_BACKEND=postgres`) the store is the server's: no database
    # file here, the directory and its lock are checked all the same.
    sqlite = services.BACKEND == "sqlite"
    try:
        assert _mode(data) == 0o700, oct(_mode(data))
        db = sorted(data.glob("sovereign.db*"))
        assert [f.name for f in db][:1] == (["sovereign.db"] if sqlite else [])
        assert {f.name: oct(_mode(f)) for f in db} == {f.name: oct(0o600) for f in db}
        assert _mode(data / "LOCK") == 0o600
    finally:
        assert p.stop() == 0
    data.chmod(0o755)
    if sqlite:
        (data / "sovereign.db").chmod(0o644)
    p = harness.start_gateway(config, tmp_path)
    try:
        assert _mode(data) == 0o700 and (not sqlite or _mode(data / "sovereign.db") == 0o600)
        harness.wait_for(lambda: "0755" in p.stderr(), timeout=5, what="the tightening in the log")
    finally:
        p.kill()
