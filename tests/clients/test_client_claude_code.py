"""A real coding agent against the gateway: Claude Code (`@anthropic-ai/claude-code`, the npm
package with its native binary, installed by scripts/setup-clients) in print mode, configured as
its gateway guide says — `ANTHROPIC_BASE_URL=<gateway> ANTHROPIC_API_KEY=<gateway key> claude -p
"…" --model <model>` — with telemetry and non-essential traffic off, a scratch HOME and a scratch
working directory, so it reaches nothing but the gateway (nothing else is reachable here anyway;
each run is bounded in time).

What it sends, per turn: `POST /v1/messages?beta=true` with `x-api-key`, `anthropic-version`,
`anthropic-beta` and `X-Claude-Code-Session-Id`, streamed, with a large system prompt, a
`system`-role message inside `messages` (its environment notes), a `<system-reminder>` text block
ahead of the user's prompt, its whole tool catalogue and the fields strict proxies reject
(`context_management`, `output_config`, `thinking`). The simulated models call the first tool
offered (Claude Code's `Agent`) with `{"text": …}`; Claude Code refuses that input and sends the
refusal back as an `is_error` tool result; the model answers it; Claude Code prints the answer and
exits 0. So each run is a tool round trip through the gateway, and the answer printed is the
simulated model's text.

In print mode, with non-essential traffic off, it calls nothing else: no `count_tokens`, no
`/v1/models` (asserted below, so a release that starts to is noticed).

One gateway for the module (the rules router with the demo's routes, `harness.RULES_ROUTING`, so
`auto-router` sends Arabic to `jais-30b-chat`; the PII guardrail; the journal), behind the
recording proxy."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

import client_harness
from client_harness import HERE, Recorder, harness
from messages_stream import check_stream

CLAUDE = HERE / "node_modules" / ".bin" / "claude"
VERSION = "2.1.328"
# A run is two model turns on a local simulator: well under a few seconds. The bound is what
# says it did not wait on anything unreachable.
BOUND_S = 60


@pytest.fixture(scope="module")
def agent_gateway(sim, keys, tmp_path_factory):
    directory = tmp_path_factory.mktemp("claude-code-gw")
    (directory / "routing.yaml").write_text(harness.RULES_ROUTING)
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=5000, stream_idle_timeout_ms=5000),
        keys["config"], routing={"document": "routing.yaml"},
        extra=harness.UNLIMITED + '\n[guardrail]\nsettings = """{"default": "redact", "entities": '
                                  '{"credit_card": "block"}}"""\n',
        journal={"enabled": True},
    )
    p = harness.start_gateway(config, directory)
    recorder = Recorder(p.url)
    yield p, recorder
    recorder.close()
    p.kill()


@pytest.fixture(scope="module")
def claude(agent_gateway, keys, tmp_path_factory):
    """Runs `claude -p PROMPT --model MODEL`; returns (completed process, seconds, the exchanges
    it made, its team's new journal entries)."""
    if not CLAUDE.exists():
        pytest.fail(f"{CLAUDE} is missing: run scripts/setup-clients")
    gateway, recorder = agent_gateway
    home = tmp_path_factory.mktemp("claude-home")
    work = tmp_path_factory.mktemp("claude-work")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": recorder.url,
        "ANTHROPIC_API_KEY": keys["claude-code"],
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }

    def run(prompt: str, model: str, ok: bool = True):
        before = client_harness.journal(gateway, keys, "claude-code")
        mark = len(recorder.exchanges)
        start = time.monotonic()
        try:
            done = subprocess.run([str(CLAUDE), "-p", prompt, "--model", model], capture_output=True, text=True,
                                  timeout=BOUND_S, env=env, cwd=work)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"claude -p did not finish within {BOUND_S} s; stderr:\n{e.stderr}") from None
        seconds = time.monotonic() - start
        assert (done.returncode == 0) == ok, (f"claude exited {done.returncode}\nstdout:\n{done.stdout[-4000:]}\n"
                                              f"stderr:\n{done.stderr[-4000:]}\ngateway stderr:\n{gateway.stderr()}")
        seen = {e["seq"] for e in before}
        entries = [e for e in client_harness.journal(gateway, keys, "claude-code") if e["seq"] not in seen]
        return done, seconds, recorder.since(mark), entries

    return run


def test_the_installed_version(tmp_path):
    if not CLAUDE.exists():
        pytest.fail(f"{CLAUDE} is missing: run scripts/setup-clients")
    done = subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True, timeout=BOUND_S,
                          env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    assert done.returncode == 0 and done.stdout.split()[0] == VERSION, done


def check_turns(exchanges: list[dict], key: str, model: str) -> list[dict]:
    """What every run sends, and the streams it got back; returns the rebuilt final blocks."""
    assert exchanges, "claude made no request"
    # Every call: the Messages route with ?beta=true, nothing else (no count_tokens, no models).
    assert [(e["method"], e["path"]) for e in exchanges] == [("POST", "/v1/messages?beta=true")] * len(exchanges)
    sessions = {e["headers"].get("x-claude-code-session-id") for e in exchanges}
    assert len(sessions) == 1 and None not in sessions, sessions
    for e in exchanges:
        h = e["headers"]
        assert h["x-api-key"] == key and "authorization" not in h, h
        assert h["anthropic-version"] == "2023-06-01" and "claude-code-20250219" in h["anthropic-beta"], h
        assert h["user-agent"].startswith(f"claude-cli/{VERSION}"), h
        assert e["status"] == 200 and e["response_headers"]["request-id"].startswith("req-"), e
        body = json.loads(e["body"])
        assert body["model"] == model and body["stream"] is True, body["model"]
        # Its whole tool catalogue, a large system prompt, and the fields strict proxies refuse.
        assert len(body["tools"]) >= 10 and {"Bash", "Read", "Edit"} <= {t["name"] for t in body["tools"]}
        assert len(json.dumps(body["system"])) > 2000
        assert {"context_management", "output_config", "thinking"} <= set(body)
    streams = client_harness.streamed(exchanges)
    assert len(streams) == len(exchanges)
    told = [check_stream(events) for events in streams]
    # The first turn: the model called Claude Code's first tool; the last: text after its result.
    assert told[0]["blocks"][-1]["type"] == "tool_use" and told[0]["delta"]["delta"]["stop_reason"] == "tool_use"
    last = json.loads(exchanges[-1]["body"])["messages"][-1]
    assert [b["type"] for b in last["content"]] == ["tool_result"] and last["content"][0]["is_error"], last
    assert told[-1]["delta"]["delta"]["stop_reason"] == "end_turn"
    return told[-1]["blocks"]


def test_print_mode_on_a_named_model_answers_through_a_tool_round_trip(claude, keys):
    model = "llama-3.2-3b-instruct"
    done, seconds, exchanges, journal = claude("What is the capital of France?", model)
    blocks = check_turns(exchanges, keys["claude-code"], model)
    [text] = [b["text"] for b in blocks if b["type"] == "text"]
    # It printed the model's answer: the simulated model's text, as streamed.
    assert done.stdout.strip() == text.strip(), done.stdout
    assert text.startswith(f"Hello! I am {model}, served from region {harness.REGION[model]}."), text
    assert [(e["action"], e["status"], e["model"]) for e in journal] == \
        [("messages.create", "success", model)] * len(exchanges), journal
    # The journal's actor is the `metadata.user_id` Claude Code sends.
    actors = {json.loads(e["body"])["metadata"]["user_id"] for e in exchanges}
    assert {e["actor_id"] for e in journal} == actors, (journal, actors)
    assert seconds < BOUND_S


def test_auto_router_sends_an_arabic_prompt_to_the_arabic_model(claude, keys, sim):
    with client_harness.Upstream(sim) as upstream:
        done, seconds, exchanges, journal = claude("ما هي عاصمة فرنسا؟ أجب باختصار.", "auto-router")
    check_turns(exchanges, keys["claude-code"], "auto-router")
    # Every turn routed to the Arabic-native model by the language of the user's prompt — not of
    # Claude Code's English system prompt or of the reminder it puts ahead of the prompt.
    for e in exchanges:
        h = e["response_headers"]
        assert h["x-route-policy"] == "test-rules" and h["x-data-residency"] == harness.REGION["jais-30b-chat"], h
    assert {u["body"]["model"] for u in upstream.requests} == {"jais-30b-chat"}, upstream.requests
    assert [(e["action"], e["status"], e["model"], e["routing_policy"]) for e in journal] == \
        [("messages.create", "success", "jais-30b-chat", "test-rules")] * len(exchanges), journal
    assert {e["residency_boundary"] for e in journal} == {harness.REGION["jais-30b-chat"]}, journal
    # The model's (Arabic) answer is what it printed.
    assert done.stdout.strip().startswith("مرحباً! أنا jais-30b-chat"), done.stdout


def test_a_card_number_in_the_prompt_is_refused_and_never_reaches_a_model(claude, sim):
    with client_harness.Upstream(sim) as upstream:
        done, seconds, exchanges, journal = claude("Refund the customer on card 4111 1111 1111 1111.",
                                                   "llama-3.2-3b-instruct", ok=False)
    # The gateway's 400 in the Anthropic shape, which Claude Code reports and does not retry.
    assert exchanges and all(e["status"] == 400 for e in exchanges), [(e["path"], e["status"]) for e in exchanges]
    body = json.loads(exchanges[0]["response"])
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", body
    assert "4111" not in exchanges[0]["response"].decode()
    assert not any("4111" in json.dumps(u) for u in upstream.requests), "a refused prompt reached a model"
    assert {(e["action"], e["status"]) for e in journal} == {("messages.create", "blocked")}, journal
    assert "credit_card" in done.stdout + done.stderr, (done.stdout, done.stderr)
