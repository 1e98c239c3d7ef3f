"""The activity journal on the request path (issue 5), through the real binary: one entry per
authenticated request with the right status, durable before the answer completes, the query API
(filters, pagination across segments, JSONL and CSV, roles), admin verify, the two verifiers
agreeing on a real gateway's journal, retention, and kill -9 during load."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import socket
import subprocess
import threading
import time

import httpx
import openai
import pytest

import harness

HI = [{"role": "user", "content": "hi"}]
# Tiny segments and frequent checkpoints, so a few requests cross segment boundaries.
SMALL = {"max_segment_entries": 4, "checkpoint_every": 3}


@pytest.fixture(scope="module")
def team_keys():
    names = {"admin": ("admin", "t1"), "member": ("member", "t1"), "auditor": ("auditor", "t1"),
             "auditor2": ("auditor", "t2"), "member2": ("member", "t2")}
    out, config = {}, {}
    for name, (role, team) in names.items():
        secret, hash_ = harness.new_key()
        out[name] = secret
        config[name] = (role, hash_, team)
    return out, config


@pytest.fixture(scope="module")
def jgw(sim, team_keys, tmp_path_factory):
    """A gateway with a small-segment durable journal; yields (process, its directory)."""
    directory = tmp_path_factory.mktemp("journal-gw")
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=2000, stream_idle_timeout_ms=2000),
        team_keys[1], journal=SMALL)
    p = harness.start_gateway(config, directory)
    yield p, directory
    p.kill()


def api(gw: harness.Proc, key: str) -> httpx.Client:
    return httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {key}"}, timeout=20)


def logs(gw, key, **query) -> httpx.Response:
    with api(gw, key) as c:
        return c.post("/v1/activity/logs", json=query)


def entries_for(gw, admin, request_id) -> list[dict]:
    r = logs(gw, admin, request_id=request_id)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def one_entry(gw, admin, request_id) -> dict:
    found = entries_for(gw, admin, request_id)
    assert len(found) == 1, found
    return found[0]


def jcs_hash(value) -> str:
    """prompt_hash as docs/JOURNAL.md defines it: sha256 of the RFC 8785 bytes of the prompt."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_every_request_kind_gets_exactly_one_entry_with_its_status(jgw, sim, team_keys):
    gw, _ = jgw
    keys = team_keys[0]
    admin, member = keys["admin"], keys["member"]
    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=member, max_retries=0, timeout=20)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "مرحبا", "name": "x"}]
    seen = {}

    raw = client.chat.completions.with_raw_response.create(model="qwen2.5-coder-32b", messages=messages)
    answer = raw.parse()
    seen["served"] = (raw.headers["x-audit-trace-id"], "success")
    assert answer.id == raw.headers["x-audit-trace-id"]
    # Durable before the answer: the entry is there the moment the response is, no polling.
    e = one_entry(gw, admin, answer.id)
    assert e["action"] == "chat.completions" and e["status"] == "success"
    assert e["model"] == "qwen2.5-coder-32b" and e["residency_boundary"] == "eu-frankfurt-1"
    assert e["routing_policy"] == "explicit-model"
    assert e["prompt_hash"] == jcs_hash(messages), "prompt_hash = sha256 of JCS(messages)"
    assert "مرحبا" not in json.dumps(e, ensure_ascii=False), "the prompt itself is never stored"
    assert e["prompt_tokens"] == answer.usage.prompt_tokens
    assert e["completion_tokens"] == answer.usage.completion_tokens
    assert e["team_id"] == "t1" and e["key_id"].startswith("key_") and e["actor_id"] == e["key_id"]
    assert e["latency_us"] > 0 and e["timestamp"].endswith("Z")
    assert e["journal_hash"].startswith("sha256:") and e["prev_hash"].startswith("sha256:")

    with api(gw, member) as c:
        r = c.post("/v1/chat/completions", json={"model": "qwen2.5-coder-32b"})  # no messages: 400
        assert r.status_code == 400
        seen["invalid"] = (r.headers["x-audit-trace-id"], "rejected")
        r = c.post("/v1/chat/completions", json={"model": "no-such-model", "messages": HI})
        assert r.status_code == 404
        seen["unknown model"] = (r.headers["x-audit-trace-id"], "rejected")
        r = c.get("/v1/models")
        assert r.status_code == 200
        seen["models"] = (r.headers["x-audit-trace-id"], "success")
        r = c.get("/v1/admin/policies")  # a member on an admin endpoint
        assert r.status_code == 403
        seen["forbidden"] = (r.headers["x-audit-trace-id"], "rejected")

    harness.sim_set(sim, "qwen2.5-coder-32b", fail="error500")
    with pytest.raises(openai.InternalServerError) as err:
        client.chat.completions.create(model="qwen2.5-coder-32b", messages=HI)
    assert err.value.status_code == 502
    seen["upstream failure"] = (err.value.response.headers["x-audit-trace-id"], "error")
    harness.sim_set(sim, "*")

    with client.chat.completions.with_streaming_response.create(
            model="qwen2.5-coder-32b", messages=HI, stream=True) as s:
        chunks = list(s.parse())
        seen["streamed"] = (s.headers["x-audit-trace-id"], "success")
    assert chunks and chunks[-1].choices[0].finish_reason == "stop"

    emb = client.embeddings.with_raw_response.create(model="multilingual-e5-small", input=["a", "b"])
    seen["embeddings"] = (emb.headers["x-audit-trace-id"], "success")

    for what, (request_id, status) in seen.items():
        e = one_entry(gw, admin, request_id)
        assert e["status"] == status, (what, e)
    assert one_entry(gw, admin, seen["unknown model"][0])["model"] is None
    streamed = one_entry(gw, admin, seen["streamed"][0])
    assert streamed["completion_tokens"] and streamed["prompt_tokens"], streamed
    e = one_entry(gw, admin, seen["embeddings"][0])
    assert (e["action"], e["model"], e["prompt_hash"]) == ("embeddings", "multilingual-e5-small", jcs_hash(["a", "b"]))
    assert one_entry(gw, admin, seen["models"][0])["action"] == "models.list"


def test_unauthenticated_requests_are_not_journaled_but_counted(jgw, team_keys):
    gw, _ = jgw
    before = harness.metrics(gw)
    r = httpx.post(f"{gw.url}/v1/chat/completions", json={"model": "x", "messages": HI},
                   headers={"Authorization": "Bearer sk-nope"})
    assert r.status_code == 401
    after = harness.metrics(gw)
    assert after["sovereign_unauthenticated_total"] == before["sovereign_unauthenticated_total"] + 1
    assert after["sovereign_journal_entries_total"] == before["sovereign_journal_entries_total"]
    assert after["sovereign_journal_append_failures_total"] == 0
    assert entries_for(gw, team_keys[0]["admin"], r.headers["x-audit-trace-id"]) == []


def test_actor_is_the_body_user_then_the_header_then_the_key(jgw, team_keys):
    gw, _ = jgw
    keys = team_keys[0]
    with api(gw, keys["member"]) as c:
        by_user = c.post("/v1/chat/completions", headers={"X-Actor-ID": "from-header"},
                         json={"model": "qwen2.5-coder-32b", "messages": HI, "user": "from-body"})
        by_header = c.post("/v1/chat/completions", headers={"X-Actor-ID": "from-header"},
                           json={"model": "qwen2.5-coder-32b", "messages": HI})
    assert one_entry(gw, keys["admin"], by_user.headers["x-audit-trace-id"])["actor_id"] == "from-body"
    assert one_entry(gw, keys["admin"], by_header.headers["x-audit-trace-id"])["actor_id"] == "from-header"
    found = logs(gw, keys["admin"], actor_id="from-header", action="chat.completions").json()["data"]
    assert [e["request_id"] for e in found] == [by_header.headers["x-audit-trace-id"]]


def _read_until(s: socket.socket, marker: bytes, deadline_s: float) -> bytes:
    data = b""
    s.settimeout(deadline_s)
    while marker not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_stream_abandoned_mid_way_still_gets_its_entry(jgw, sim, team_keys):
    gw, _ = jgw
    keys = team_keys[0]
    harness.sim_set(sim, "magistral-small", token_interval_ms=100)
    body = json.dumps({"model": "magistral-small", "messages": HI, "stream": True, "max_tokens": 200}).encode()
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {keys['member']}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    s = socket.create_connection(harness.host_port(gw))
    try:
        s.sendall(request)
        head = _read_until(s, b"data: ", 5)
        assert head.startswith(b"HTTP/1.1 200 "), head
    finally:
        s.close()
    request_id = next(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                      if line.lower().startswith(b"x-audit-trace-id:"))
    entry = harness.wait_for(lambda: entries_for(gw, keys["admin"], request_id), timeout=10,
                             what="the abandoned stream's entry")
    assert len(entry) == 1 and entry[0]["status"] == "error", entry
    assert entry[0]["model"] == "magistral-small"


def test_query_filters_pagination_and_exports(jgw, team_keys):
    gw, _ = jgw
    keys = team_keys[0]
    with api(gw, keys["member2"]) as c:  # team t2's traffic
        t2_ids = [c.post("/v1/chat/completions", json={"model": "allam-7b-instruct", "messages": HI})
                  .headers["x-audit-trace-id"] for _ in range(3)]
    with api(gw, keys["member"]) as c:
        for _ in range(6):
            assert c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI}).status_code == 200

    everything = logs(gw, keys["admin"], limit=1000).json()
    assert everything["object"] == "list" and everything["next_cursor"] is None
    all_entries = everything["data"]
    seqs = [e["seq"] for e in all_entries]
    assert seqs == list(range(1, len(seqs) + 1)), "every entry, in seq order"
    assert len(seqs) > 3 * SMALL["max_segment_entries"], "the journal spans several segments"

    # Pages of 3 across segment boundaries (4 entries per segment) give the same entries.
    paged, cursor = [], None
    while True:
        page = logs(gw, keys["admin"], limit=3, **({"cursor": cursor} if cursor else {})).json()
        assert len(page["data"]) <= 3
        paged += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [e["seq"] for e in paged[:len(seqs)]] == seqs

    # Filters.
    t2 = logs(gw, keys["admin"], team_id="t2", model="allam-7b-instruct").json()["data"]
    assert [e["request_id"] for e in t2] == t2_ids
    ok = logs(gw, keys["admin"], status="success", action="chat.completions", model="jais-30b-chat").json()["data"]
    assert len(ok) >= 6 and all(e["status"] == "success" and e["model"] == "jais-30b-chat" for e in ok)
    first, last = all_entries[0]["timestamp"], all_entries[-1]["timestamp"]
    window = logs(gw, keys["admin"], **{"from": first, "to": last}, limit=1000).json()["data"]
    assert window and all(first <= e["timestamp"] < last for e in window)
    assert logs(gw, keys["admin"], **{"from": "2001-01-01", "to": "2001-01-02"}).json()["data"] == []

    # JSONL and CSV exports hold the same entries as the JSON pages: JSONL the lines exactly as
    # the chain holds them (verifiable as they are), JSON pages each with the chain's `replica`.
    assert {e["replica"] for e in all_entries} == {"test-gw-1"}
    r = logs(gw, keys["admin"], format="jsonl", limit=len(seqs))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    assert [json.loads(line) for line in r.text.splitlines()] == [
        {k: v for k, v in e.items() if k != "replica"} for e in all_entries]
    r = logs(gw, keys["admin"], format="csv", limit=len(seqs))
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [int(row["seq"]) for row in rows] == seqs
    assert [row["journal_hash"] for row in rows] == [e["journal_hash"] for e in all_entries]
    assert rows[0]["model"] == (all_entries[0]["model"] or "")
    assert {row["replica"] for row in rows} == {"test-gw-1"}

    # Roles: an auditor sees its own team only; members none of it.
    mine = logs(gw, keys["auditor2"], limit=1000).json()["data"]
    assert mine and {e["team_id"] for e in mine} == {"t2"}
    assert set(t2_ids) <= {e["request_id"] for e in mine}
    r = logs(gw, keys["auditor2"], team_id="t1")
    assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"
    assert {e["team_id"] for e in logs(gw, keys["auditor"], limit=1000).json()["data"]} == {"t1"}
    for member in ("member", "member2"):
        r = logs(gw, keys[member])
        assert r.status_code == 403, r.text
        assert r.json()["error"]["type"] == "permission_error"


def test_a_walk_ends_at_the_head_its_first_page_saw(jgw, team_keys):
    """Issue 49, bug 2: every page read is itself journaled, so a `limit=1` walk bounded only by
    the chain's end grows the tail as fast as it reads it and never ends. The head at the first
    page bounds the whole walk (the cursor carries it), whatever is appended meanwhile."""
    gw, _ = jgw
    admin, member = team_keys[0]["admin"], team_keys[0]["member"]
    with api(gw, member) as m:
        for _ in range(12):
            assert m.get("/v1/models").status_code == 200
    head = logs(gw, admin, limit=1000, format="jsonl").text.splitlines()
    head = json.loads(head[-1])["seq"] + 1  # that export's own entry is in before the walk begins
    seen, cursor = [], None
    with api(gw, admin) as c, api(gw, member) as m:
        for _ in range(head + 10):
            page = c.post("/v1/activity/logs", json={"limit": 1, **({"cursor": cursor} if cursor else {})}).json()
            seen += [e["seq"] for e in page["data"]]
            assert m.get("/v1/models").status_code == 200  # and other traffic meanwhile
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert cursor is None, f"the walk did not end: {len(seen)} pages, at seq {seen[-1]}, head was {head}"
    assert seen == list(range(1, head + 1)), "every entry up to the first page's head, once"
    # A fresh walk begins at today's head: it sees the first walk's own pages.
    assert logs(gw, admin, limit=1000).json()["data"][-1]["seq"] > head + len(seen)


def test_newest_first_pages_walk_the_journal_backwards(jgw, team_keys):
    """`order: desc` (issue 49: the console opens the journal at the newest entry, the Policies
    panel reads the latest routed requests): the same entries, newest first, across segments,
    filtered, bounded by the head at the first page."""
    gw, _ = jgw
    admin, member = team_keys[0]["admin"], team_keys[0]["member"]
    with api(gw, member) as m:
        for _ in range(5):
            assert m.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI}).status_code == 200
    oldest = logs(gw, admin, limit=1000).json()["data"]
    head = oldest[-1]["seq"] + 1  # that read's own entry
    seen, cursor = [], None
    while True:
        page = logs(gw, admin, order="desc", limit=3, **({"cursor": cursor} if cursor else {})).json()
        seen += [e["seq"] for e in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen[0] >= head and seen == list(range(seen[0], 0, -1)), seen[:10]
    chats = [e["seq"] for e in logs(gw, admin, order="desc", action="chat.completions", limit=4).json()["data"]]
    assert chats == sorted(chats, reverse=True) and len(chats) == 4
    assert chats == [e["seq"] for e in oldest if e["action"] == "chat.completions"][::-1][:4]
    exported = [json.loads(line)["seq"] for line in logs(gw, admin, format="jsonl", order="desc", limit=3).text.splitlines()]
    assert len(exported) == 3 and exported == list(range(exported[0], exported[0] - 3, -1)) and exported[0] > seen[0]


@pytest.mark.parametrize("query, param", [
    ({"order": "newest"}, "order"),
    ({"status": "fine"}, "status"),
    ({"from": "yesterday"}, "from"),
    ({"to": "2026-13-01T00:00:00Z"}, "to"),
    ({"limit": 0}, "limit"),
    ({"limit": 1001}, "limit"),
    ({"cursor": "abc"}, "cursor"),
    ({"format": "xml"}, "format"),
    ({"colour": "red"}, None),
    ({"limit": "ten"}, None),
])
def test_bad_filters_are_400_in_the_error_shape(jgw, team_keys, query, param):
    gw, _ = jgw
    r = logs(gw, team_keys[0]["admin"], **query)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    if param:
        assert error["param"] == param


def test_admin_verify_endpoint_and_both_verifiers_agree_on_the_live_journal(jgw, team_keys, tmp_path):
    gw, directory = jgw
    keys = team_keys[0]
    with api(gw, keys["member"]) as c:
        for _ in range(5):
            c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI})
    with api(gw, keys["admin"]) as c:
        r = c.get("/v1/admin/journal/verify")
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["ok"] is True, report
    chain = report["chains"][0]
    assert chain["sovereign_id"] == "test-gw-1" and chain["entries"] >= 5 and chain["problem"] is None
    assert report["report"].startswith("OK test-gw-1:")
    for role in ("member", "auditor"):
        with api(gw, keys[role]) as c:
            r = c.get("/v1/admin/journal/verify")
        assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"

    rust, python = harness.verify_journal(harness.journal_dir(directory))
    assert rust.returncode == 0 and python.returncode == 0, (rust.stdout, python.stdout)
    assert rust.stdout.startswith("OK test-gw-1:") and python.stdout.startswith("OK test-gw-1:")

    # On a tampered copy of the real journal, both fail, naming the same file and line.
    copy = tmp_path / "copy"
    shutil.copytree(harness.journal_dir(directory), copy)
    second = sorted(copy.glob("journal-*.jsonl"))[1]
    lines = second.read_text().splitlines()
    lines[1] = lines[1].replace('"t1"', '"t9"')
    second.write_text("\n".join(lines) + "\n")
    rust, python = harness.verify_journal(copy)
    assert rust.returncode == python.returncode == 1, (rust.stdout, python.stdout)
    where = f"FAIL test-gw-1: {second.name}:2"
    assert rust.stdout.startswith(where) and python.stdout.startswith(where), (rust.stdout, python.stdout)


def test_checkpoint_on_demand_vouches_for_the_exported_head(jgw, team_keys):
    """POST /v1/admin/journal/checkpoints signs the durable head now (auditor or admin); GET lists
    them; the newest names the last exported entry's hash, and its signature is the operator's."""
    gw, directory = jgw
    keys = team_keys[0]
    with api(gw, keys["member"]) as c:
        c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI})
        assert c.post("/v1/admin/journal/checkpoints").status_code == 403
        assert c.get("/v1/admin/journal/checkpoints").status_code == 403
    with api(gw, keys["auditor"]) as c:
        export = c.post("/v1/activity/logs", json={"format": "jsonl"})
        r = c.post("/v1/admin/journal/checkpoints")
        assert r.status_code == 201, r.text
        cp = r.json()
        listed = c.get("/v1/admin/journal/checkpoints")
    assert listed.status_code == 200 and listed.json()["object"] == "list"
    assert listed.json()["data"][-1] == cp
    # The export was answered before the checkpoint was asked for: the checkpoint covers at least
    # the export's head.
    last = json.loads(export.text.splitlines()[-1])
    assert cp["seq"] >= last["seq"] and cp["count"] == cp["seq"]
    assert cp["sovereign_id"] == "test-gw-1" and cp["signature"].startswith("ed25519:")
    assert cp["public_key"] == (directory / "data" / "journal-signing.key.pub").read_text().strip()
    rust, _ = harness.verify_journal(harness.journal_dir(directory))
    assert rust.returncode == 0, rust.stdout


def test_kill_9_during_load_loses_no_answered_request(sim, team_keys, tmp_path):
    """Eight clients keep sending; the gateway is SIGKILLed; after a restart the journal verifies
    and every request that got a 200 before the kill has its entry."""
    keys, config_keys = team_keys
    config = harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=SMALL)
    gw = harness.start_gateway(config, tmp_path)
    answered: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def load():
        with api(gw, keys["member"]) as c:
            while not stop.is_set():
                try:
                    r = c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI})
                except httpx.HTTPError:
                    return  # the gateway is gone
                if r.status_code == 200:
                    with lock:
                        answered.append(r.headers["x-audit-trace-id"])

    threads = [threading.Thread(target=load) for _ in range(8)]
    for t in threads:
        t.start()
    harness.wait_for(lambda: len(answered) >= 200, timeout=60, what="200 answered requests")
    gw.proc.kill()  # SIGKILL, mid-load
    gw.proc.wait()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    with lock:
        acknowledged = list(answered)

    restarted = harness.start_gateway(config, tmp_path)
    try:
        journal = harness.journal_dir(tmp_path)
        rust, python = harness.verify_journal(journal)
        assert rust.returncode == 0, rust.stdout + rust.stderr
        assert python.returncode == 0, python.stdout
        recorded = set()
        for segment in sorted(journal.glob("journal-*.jsonl")):
            recorded |= {json.loads(line)["request_id"] for line in segment.read_text().splitlines()}
        missing = [r for r in acknowledged if r not in recorded]
        assert not missing, f"{len(missing)} of {len(acknowledged)} answered requests have no entry"
        # The restarted gateway continues the chain.
        with api(restarted, keys["member"]) as c:
            assert c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI}).status_code == 200
    finally:
        restarted.kill()
    rust, _ = harness.verify_journal(harness.journal_dir(tmp_path))
    assert rust.returncode == 0, rust.stdout


def test_retention_prunes_closed_segments_and_the_chain_still_verifies(sim, team_keys, tmp_path):
    keys, config_keys = team_keys
    export = tmp_path / "export"
    journal = {**SMALL, "max_bytes": 1, "retention_interval_s": 1, "export_dir": str(export)}
    gw = harness.start_gateway(harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=journal),
                               tmp_path)
    try:
        with api(gw, keys["member"]) as c:
            for _ in range(10):
                assert c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI}).status_code == 200
        directory = harness.journal_dir(tmp_path)
        harness.wait_for(lambda: (directory / "anchor-test-gw-1.jsonl").exists()
                         and len(list(export.glob("journal-*.jsonl"))) >= 2,
                         timeout=15, what="a retention pass")
        # The pruned entries are gone from the query API; what remains is still served.
        data = logs(gw, keys["admin"], limit=1000).json()["data"]
        assert data and data[0]["seq"] > 1
        assert gw.stop() == 0  # no retention pass runs while the directories are verified
        for checked in (directory, export):  # the exported segments verify on their own
            rust, python = harness.verify_journal(checked)
            assert rust.returncode == 0 and python.returncode == 0, (checked, rust.stdout, python.stdout)
        assert "pruned behind an anchor" in harness.verify_journal(directory)[0].stdout
    finally:
        gw.kill()


def test_refuses_to_start_on_a_damaged_chain_unless_forced(sim, team_keys, tmp_path):
    keys, config_keys = team_keys
    config = harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=SMALL)
    gw = harness.start_gateway(config, tmp_path)
    with api(gw, keys["member"]) as c:
        for _ in range(6):
            c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI})
    assert gw.stop() == 0
    first = sorted(harness.journal_dir(tmp_path).glob("journal-*.jsonl"))[0]
    lines = first.read_text().splitlines()
    lines[1] = lines[1].replace('"success"', '"error"')
    first.write_text("\n".join(lines) + "\n")
    refused = subprocess.run([str(harness.BIN), "serve", "--config", str(tmp_path / "gateway.toml")],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "fails verification" in refused.stderr, refused.stderr
    forced = harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal={**SMALL, "force": True})
    gw = harness.start_gateway(forced, tmp_path)
    try:
        with api(gw, keys["member"]) as c:
            assert c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI}).status_code == 200
    finally:
        gw.kill()
    rust, _ = harness.verify_journal(harness.journal_dir(tmp_path))
    assert rust.returncode == 1, "force does not launder the damage"


def test_batched_mode_serves_and_journals(sim, team_keys, tmp_path):
    keys, config_keys = team_keys
    journal = {**SMALL, "durability": "batched", "batch_window_ms": 5}
    gw = harness.start_gateway(harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=journal),
                               tmp_path)
    try:
        with api(gw, keys["member"]) as c:
            r = c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI})
        assert r.status_code == 200
        found = harness.wait_for(lambda: entries_for(gw, keys["admin"], r.headers["x-audit-trace-id"]),
                                 timeout=5, what="the batched entry")
        assert found[0]["status"] == "success"
        assert gw.stop() == 0, "graceful shutdown flushes and closes the journal"
        rust, _ = harness.verify_journal(harness.journal_dir(tmp_path))
        assert rust.returncode == 0, rust.stdout
    finally:
        gw.kill()


def test_preallocated_room_is_invisible_to_readers_and_cut_at_shutdown(sim, team_keys, tmp_path):
    """`preallocate_bytes`: the live segment ends in zeroed room; the activity API and both
    verifiers see exactly the entries, and a graceful stop leaves plain JSON lines."""
    keys, config_keys = team_keys
    journal = {"preallocate_bytes": 1 << 20}
    gw = harness.start_gateway(harness.gateway_config(harness.fleet_models(sim.url), config_keys, journal=journal),
                               tmp_path)
    try:
        with api(gw, keys["member"]) as c:
            ids = [c.post("/v1/chat/completions", json={"model": "jais-30b-chat", "messages": HI})
                   .headers["x-audit-trace-id"] for _ in range(3)]
        (segment,) = harness.journal_dir(tmp_path).glob("journal-*.jsonl")
        live = segment.read_bytes()
        data = live.index(b"\0")
        assert len(live) - data >= 1 << 19 and not live[data:].strip(b"\0"), "no zeroed room after the data"
        assert all(entries_for(gw, keys["admin"], i) for i in ids)
        rust, python = harness.verify_journal(harness.journal_dir(tmp_path))
        assert rust.returncode == 0 and "torn" not in rust.stdout, rust.stdout
        assert python.returncode == 0, python.stdout
        assert gw.stop() == 0
        closed = segment.read_bytes()
        assert b"\0" not in closed and closed.startswith(live[:data])
    finally:
        gw.kill()
