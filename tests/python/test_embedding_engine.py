"""The built-in embedding engine shared fairly and bounded (issue 44 item 4, issue 49's high
red-team finding), through the real binary: one engine and one scheduler behind `/v1/embeddings`
on the built-in model, RAG queries and uploads.

- A big `/v1/embeddings` request whose client goes away stops using the engine (the windows
  counter in `/metrics` stops moving well before the request's work is done, and the job is
  counted as cancelled).
- Another team's RAG query stays fast while a big embeddings request runs (teams take turns
  batch by batch; queries are interactive work).
- The compute of one request is bounded before it starts: an input over 8,192 tokens is 400, a
  request over `[documents] max_embedding_tokens` 413, both in the OpenAI error shape.
- The built-in model's tokens count against the team's tokens per day (429 once it is spent)."""

from __future__ import annotations

import threading
import time

import httpx
import openai
import pytest

import harness

E5 = "multilingual-e5-small-q4"
# Distinct words so no two inputs are alike; 200 of them are about 500 e5 tokens (one window).
WORDS = ("records ledger archive customer bank report retention policy transaction audit "
         "سجلات العملاء البنك تقرير الاحتفاظ المعاملات ").split()


def long_text(seed: int, words: int = 200) -> str:
    return " ".join(f"{WORDS[(seed * 7 + i) % len(WORDS)]}{(seed * 131 + i) % 97}" for i in range(words))


def windows(gw: harness.Proc) -> float:
    return harness.metrics(gw).get("sovereign_embed_windows_total", 0.0)


@pytest.fixture(scope="module")
def keys():
    names = {"a": ("member", "t1"), "b": ("member", "t2"), "c": ("member", "t3")}
    secrets, config = {}, {}
    for name, (role, team) in names.items():
        secret, hash_ = harness.new_key()
        secrets[name] = secret
        config[name] = (role, hash_, team)
    return secrets, config


@pytest.fixture(scope="module")
def big(sim, keys, tmp_path_factory):
    """A gateway whose requests may ask for up to 40,000 tokens (the big requests below)."""
    directory = tmp_path_factory.mktemp("engine-big")
    extra = harness.UNLIMITED + "\n[documents]\nmax_embedding_tokens = 40000\n"
    p = harness.start_gateway(harness.gateway_config(harness.fleet_models(sim.url), keys[1], extra=extra),
                              directory)
    yield p
    p.kill()


@pytest.fixture(scope="module")
def small(sim, keys, tmp_path_factory):
    """A gateway with a 2,048-token cap per request and 600 tokens per team per day."""
    directory = tmp_path_factory.mktemp("engine-small")
    extra = ("\n[access]\nip_requests_per_minute = 0\n\n[plans.development]\nrequests_per_minute = 0\n"
             "burst = 0\ntokens_per_day = 600\n\n[documents]\nmax_embedding_tokens = 2048\n")
    config = harness.gateway_config(harness.fleet_models(sim.url), keys[1], team_plan="development", extra=extra)
    p = harness.start_gateway(config, directory)
    yield p
    p.kill()


def embed(gw: harness.Proc, secret: str, inputs, timeout: float = 120.0) -> httpx.Response:
    return httpx.post(f"{gw.url}/v1/embeddings", headers={"Authorization": f"Bearer {secret}"},
                      json={"model": E5, "input": inputs}, timeout=timeout)


def test_a_big_request_abandoned_by_its_client_stops_using_the_engine(big, keys):
    inputs = [long_text(i) for i in range(60)]  # 60 windows, ~30,000 tokens: tens of CPU-seconds
    before = harness.metrics(big)
    cancelled_before = before.get("sovereign_embed_jobs_cancelled_total", 0.0)
    start = before.get("sovereign_embed_windows_total", 0.0)
    with pytest.raises(httpx.TimeoutException):
        embed(big, keys[0]["a"], inputs, timeout=1.5)
    # The job is dropped before its next batch: the counter stops, and says why.
    harness.wait_for(lambda: harness.metrics(big).get("sovereign_embed_jobs_cancelled_total", 0.0)
                     > cancelled_before, timeout=30, what="the abandoned job to be cancelled")
    settled = windows(big)
    time.sleep(1.5)
    after = windows(big)
    assert after == settled, "the engine kept working for a client that went away"
    assert after - start < len(inputs) / 2, (start, after)
    assert harness.metrics(big).get("sovereign_embed_interactive_jobs", -1) == 0


def test_another_teams_rag_query_stays_fast_while_a_big_request_runs(big, keys):
    docs = httpx.Client(base_url=big.url, headers={"Authorization": f"Bearer {keys[0]['b']}"}, timeout=60)
    r = docs.post("/v1/documents/upload?wait=true", data={"collection": "engine"},
                  files={"file": ("policy.txt", b"Customer records must be kept for ten years.\n", "text/plain")})
    assert r.status_code in (200, 201), r.text
    inputs = [long_text(1000 + i) for i in range(60)]
    result: dict = {}

    def run():
        t0 = time.monotonic()
        result["response"] = embed(big, keys[0]["a"], inputs)
        result["seconds"] = time.monotonic() - t0

    started = windows(big)
    worker = threading.Thread(target=run)
    worker.start()
    try:
        harness.wait_for(lambda: windows(big) >= started + 2, timeout=60, what="the big request to be running")
        t0 = time.monotonic()
        q = docs.post("/v1/rag/query", json={"query": "How long must customer records be kept?",
                                             "collection": "engine"})
        query_seconds = time.monotonic() - t0
        assert q.status_code == 200, q.text
        assert "ten years" in q.json()["citations"][0]["text"]
        still_running = worker.is_alive()
    finally:
        worker.join(timeout=300)
        docs.close()
    assert result["response"].status_code == 200, result["response"].text
    assert len(result["response"].json()["data"]) == len(inputs)
    assert still_running, "the big request finished before the query: the test proves nothing"
    # One batch of the other team's windows at most, not the whole request.
    assert query_seconds < max(2.0, result["seconds"] / 4), (query_seconds, result["seconds"])


def test_the_compute_of_one_request_is_bounded_before_it_starts(small, keys):
    client = openai.OpenAI(base_url=f"{small.url}/v1", api_key=keys[0]["a"], max_retries=0, timeout=60)
    before = windows(small)
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=E5, input=[long_text(7, words=6000)])
    body = e.value.response.json()["error"]
    assert body["code"] == "context_length_exceeded" and body["param"] == "input", body
    assert set(body) >= {"message", "type", "param", "code"}
    r = embed(small, keys[0]["a"], [long_text(i) for i in range(6)])  # ~3,000 tokens
    assert r.status_code == 413, r.text
    err = r.json()["error"]
    assert (err["type"], err["code"], err["param"]) == ("invalid_request_error", "too_many_tokens", "input"), err
    assert "max_embedding_tokens" in err["message"]
    assert windows(small) == before, "a refused request ran on the engine"


def test_built_in_embedding_tokens_count_against_the_teams_tokens_per_day(small, keys):
    client = openai.OpenAI(base_url=f"{small.url}/v1", api_key=keys[0]["c"], max_retries=0, timeout=60)
    first = client.embeddings.create(model=E5, input=[long_text(3), long_text(4)])
    assert first.usage.prompt_tokens > 600, first.usage
    with pytest.raises(openai.RateLimitError) as e:
        client.embeddings.create(model=E5, input="one more")
    assert e.value.response.json()["error"]["code"] == "tokens_per_day_exceeded"
    # Another team's day is its own.
    other = openai.OpenAI(base_url=f"{small.url}/v1", api_key=keys[0]["b"], max_retries=0, timeout=60)
    assert len(other.embeddings.create(model=E5, input="hello").data[0].embedding) == 384
