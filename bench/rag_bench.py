#!/usr/bin/env python3
"""The document library through the real gateway binary (issue 15's benchmark).

  .venv/bin/python bench/rag_bench.py [--bin target/release/sovereign] [--pdf dense300.pdf]
                                      [--sizes 10000,100000] [--queries 200] [--engine-nice 10]

1. Ingestion end to end: a many-page PDF uploaded through `POST /v1/documents/upload` (multipart,
   extraction in the child process, chunking, the PII guardrail, in-process e5 embedding, SQLite,
   index) — pages/s of wall time and per CPU second of the gateway (its children included); the
   upload's answer time (it is asynchronous: 202 `in_progress`) and its time to searchable
   (`completed`, polled); and chat completions' p50/p99 (one at a time, 10/s, against `sovereign
   simulate` with no simulated latency, so only the gateway's own time is measured) idle and
   during the ingestion.
   Make the 300-page PDF with `EXTRACT_BENCH_WRITE=/tmp/dense300.pdf cargo run --release -p
   sovereign-documents --example extract_bench` (extraction alone is measured there).
2. Queries at N chunks: the store is seeded with N synthetic chunks (clustered 384-d vectors,
   150-word texts from an Arabic/English vocabulary) written straight into SQLite, the gateway
   restarted (index rebuilt from the store: timed), then `POST /v1/rag/query` one at a time: p50 /
   p99 of the whole request (auth, guardrail, query embedding, hybrid search, citations from the
   store, journal append) and the gateway's resident memory against an empty library.

Every policy a production gateway runs is on: key auth, the durable journal, the PII guardrail.
"""

import argparse
import json
import math
import os
import random
import re
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
MODEL_ID = "multilingual-e5-small-q4"
EMBEDDING_CONTEXT = "ctx2"  # host/src/rag/headers.rs: each chunk stored alone and after its title
DIMS = 384
USER_HZ = os.sysconf("SC_CLK_TCK")

QUERIES = [
    "How long must customer records be kept?",
    "What is the deadline for reporting suspicious transactions?",
    "كم مدة الاحتفاظ بسجلات العملاء؟",
    "ما هي مدة الإبلاغ عن المعاملات المشبوهة؟",
    "Which branches does notice 42 apply to?",
    "ما شروط فتح حساب جديد؟",
    "Who approves a wire transfer above the limit?",
    "هل يجوز حذف السجلات قبل انتهاء المدة؟",
]

VOCAB = (
    "bank record customer retention policy period years transaction report suspicious branch "
    "notice article disclosure compliance account transfer limit approval risk audit officer "
    "data privacy consent document retention archive regulation circular ministry health leave "
    "سجل العملاء الاحتفاظ سياسة مدة سنوات المعاملات المشبوهة الإبلاغ البنك فرع إشعار المادة "
    "الإفصاح الامتثال حساب تحويل حد موافقة مخاطر تدقيق موظف بيانات خصوصية موافقة وثيقة أرشيف "
    "لائحة تعميم وزارة صحة إجازة"
).split()


ENGINE_NICE = 10  # [documents] engine_nice: --engine-nice


def config_text(data_dir: Path, key_hash: str, chat_url: str) -> str:
    settings = json.dumps({"default": "redact"})
    return f"""
sovereign_id = "rag-bench"
region = "sa-riyadh-1"
default_model = "llama-3.2-3b-instruct"
data_dir = "{data_dir}"

[server]
listen = "127.0.0.1:0"

[[models]]
id = "llama-3.2-3b-instruct"
base_url = "{chat_url}"
family = "none"
kind = "chat"
region = "sa-riyadh-1"
local = true

[[teams]]
id = "bench"
plan = "enterprise"

[[keys]]
name = "bench"
team = "bench"
role = "member"
hash = "{key_hash}"

[access]
ip_requests_per_minute = 0

[plans.enterprise]
requests_per_minute = 0
burst = 0
tokens_per_day = 0

[guardrail]
settings = {json.dumps(settings)}

[documents]
max_upload_bytes = 209715200
max_pages = 5000
extract_timeout_ms = 300000
engine_nice = {ENGINE_NICE}
"""


def start(args: list[str], what: str, env: dict) -> tuple[subprocess.Popen, str]:
    """Starts `sovereign <args>` and waits for its `listening on URL` line: (process, URL)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in proc.stdout:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, m.group(1)
    raise SystemExit(f"the {what} did not start")


class Gateway:
    def __init__(self, binary: Path, directory: Path, key_hash: str, chat_url: str = "http://127.0.0.1:9/v1"):
        (directory / "gateway.toml").write_text(config_text(directory / "data", key_hash, chat_url))
        env = dict(os.environ, RUST_LOG="warn", OMP_WAIT_POLICY="passive")
        started = time.perf_counter()
        self.proc, self.url = start([str(binary), "serve", "--config", str(directory / "gateway.toml")],
                                    "gateway", env)
        self.start_seconds = time.perf_counter() - started

    def cpu_seconds(self) -> float:
        """User + system CPU of the gateway and its reaped children (the extraction processes)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) / USER_HZ

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def keygen(binary: Path) -> tuple[str, str]:
    out = subprocess.run([str(binary), "keygen"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].split()[1], out.splitlines()[1].split('"')[1]


class Simulator:
    """`sovereign simulate`: the chat model whose latency is measured while documents ingest."""

    def __init__(self, binary: Path):
        self.proc, self.url = start([str(binary), "simulate", "--listen", "127.0.0.1:0", "--latency-ms", "0",
                                     "--token-interval-ms", "0"], "simulator", dict(os.environ, RUST_LOG="warn"))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


CHAT_RATE = 10  # chat requests per second while measuring, one at a time


def chat_latencies(url: str, key: str, stop: threading.Event, out: list[float]):
    """Chat completions at CHAT_RATE per second, one at a time, until `stop`: each latency in ms."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        next_at = time.perf_counter()
        while not stop.is_set():
            t0 = time.perf_counter()
            r = c.post("/v1/chat/completions", json={"model": "llama-3.2-3b-instruct", "max_tokens": 16,
                                                     "messages": [{"role": "user", "content": "hi"}]})
            r.raise_for_status()
            out.append((time.perf_counter() - t0) * 1000)
            next_at += 1 / CHAT_RATE
            time.sleep(max(0.0, next_at - time.perf_counter()))


def ingest(binary: Path, pdf: Path, key: str, key_hash: str, runs: int):
    with tempfile.TemporaryDirectory() as tmp:
        sim = Simulator(binary)
        gw = Gateway(binary, Path(tmp), key_hash, chat_url=f"{sim.url}/v1")
        data = pdf.read_bytes()
        results = []
        with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as c:
            # Warm-up: the model's first call and the extraction child's first start.
            c.post("/v1/documents/upload", params={"wait": "true"},
                   files={"file": ("warm.txt", b"Warm-up text.", "text/plain")},
                   data={"collection": "warm"}).raise_for_status()
            idle: list[float] = []
            stop = threading.Event()
            t = threading.Thread(target=chat_latencies, args=(gw.url, key, stop, idle))
            t.start()
            time.sleep(20)
            stop.set()
            t.join()
            busy: list[float] = []
            for run in range(1, runs + 1):
                stop = threading.Event()
                t = threading.Thread(target=chat_latencies, args=(gw.url, key, stop, busy))
                t.start()
                cpu0, t0 = gw.cpu_seconds(), time.perf_counter()
                r = c.post("/v1/documents/upload",
                           files={"file": (pdf.name, data, "application/pdf")},
                           data={"collection": f"run{run}"})
                answered = time.perf_counter() - t0
                r.raise_for_status()
                doc = r.json()
                while doc["status"] == "in_progress":
                    time.sleep(0.25)
                    doc = c.get(f"/v1/documents/{doc['id']}").raise_for_status().json()
                wall, cpu = time.perf_counter() - t0, gw.cpu_seconds() - cpu0
                stop.set()
                t.join()
                if doc["status"] != "completed":
                    raise SystemExit(f"the upload ended {doc['status']}: {doc.get('last_error')}")
                results.append((doc["pages"], doc["chunks"], wall, cpu, answered))
        gw.stop()
        sim.stop()
    pages = sum(r[0] for r in results)
    chunks = sum(r[1] for r in results)
    wall = sum(r[2] for r in results)
    cpu = sum(r[3] for r in results)
    print(f"ingestion: {runs} × {pdf.name} ({len(data) // 1024} KiB, {results[0][0]} pages, "
          f"{results[0][1]} chunks each)")
    print(f"  upload answered in {max(r[4] for r in results):.3f} s at most; searchable after "
          f"{max(r[2] for r in results):.1f} s at most")
    print(f"  end to end: {pages / wall:.2f} pages/s wall ({chunks / wall:.1f} chunks/s), "
          f"{pages / cpu:.2f} pages per CPU second ({cpu / runs:.1f} CPU s per upload)")
    print(f"  chat ({CHAT_RATE}/s, one at a time) idle: p50 {percentile(idle, 50):.1f} ms, p99 "
          f"{percentile(idle, 99):.1f} ms ({len(idle)}); during ingestion: p50 {percentile(busy, 50):.1f} ms, "
          f"p99 {percentile(busy, 99):.1f} ms ({len(busy)}); p99 ratio "
          f"{percentile(busy, 99) / percentile(idle, 99):.2f}")


def synthetic_text(rng: random.Random, words: int) -> str:
    # Zipf-like: low ranks far more frequent.
    return " ".join(VOCAB[min(int(rng.paretovariate(1.2)) - 1, len(VOCAB) - 1)] for _ in range(words))


def seed(db: Path, n: int, model_key: str):
    rng = random.Random(7)
    centres = []
    for _ in range(200):
        v = [rng.gauss(0, 1) for _ in range(DIMS)]
        norm = math.sqrt(sum(x * x for x in v))
        centres.append([x / norm for x in v])
    con = sqlite3.connect(db)
    now = int(time.time() * 1000)
    per_doc = 100
    with con:
        for d in range(0, n, per_doc):
            doc_id = f"doc_{uuid.uuid4().hex}"
            count = min(per_doc, n - d)
            con.execute("INSERT INTO documents (id, team_id, collection, filename, kind, bytes, sha256, pages, "
                        "chunks, metadata, model, created_at) VALUES (?, 'bench', 'default', ?, 'text', 0, ?, NULL, "
                        "?, '{}', ?, ?)", (doc_id, f"synthetic-{d}.txt", uuid.uuid4().hex, count, model_key, now))
            rows = []
            for i in range(count):
                c = centres[rng.randrange(len(centres))]
                v = [x + rng.gauss(0, 0.04) for x in c]
                norm = math.sqrt(sum(x * x for x in v))
                unit = [x / norm for x in v]
                # `ctx2`: the chunk's vector alone, then after its title (here the same).
                rows.append((doc_id, i, i + 1, synthetic_text(rng, 150),
                             struct.pack(f"<{2 * DIMS}f", *unit, *unit)))
            con.executemany("INSERT INTO document_chunks (document_id, ordinal, page, paragraph, text, vector) "
                            "VALUES (?, ?, NULL, ?, ?, ?)", rows)
    con.close()


def model_key() -> str:
    """The key the gateway tags the built-in model's vectors with (`Embedder::key`): the sha256
    over the weights file then the ONNX graph, and the chunks' embedding context."""
    import hashlib
    h = hashlib.sha256()
    for name in ("e5-small-q4.bin", "e5-small-fp32.onnx"):
        h.update((ROOT / "models/e5" / name).read_bytes())
    return f"{MODEL_ID}@{h.hexdigest()[:12]}+{EMBEDDING_CONTEXT}"


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def queries(binary: Path, key: str, key_hash: str, sizes: list[int], count: int):
    key_model = model_key()
    print("queries (one at a time; whole request: auth, guardrail, query embedding, hybrid search, "
          "citations, journal)")
    print(f"  {'chunks':>8} | {'start (rebuild)':>15} | {'p50 ms':>7} | {'p99 ms':>7} | {'mean ms':>7} | "
          f"{'RSS MiB':>8} | {'+RSS per 100k':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        gw = Gateway(binary, Path(tmp), key_hash)  # creates the schema; the empty library's memory
        with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            for q in QUERIES:
                c.post("/v1/rag/query", json={"query": q}).raise_for_status()
        empty_rss = gw.rss_mib()
        gw.stop()
        seeded = 0
        for n in sizes:
            seed(Path(tmp) / "data/sovereign.db", n - seeded, key_model)
            seeded = n
            gw = Gateway(binary, Path(tmp), key_hash)
            latencies = []
            with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
                for i in range(count + 10):
                    t0 = time.perf_counter()
                    r = c.post("/v1/rag/query", json={"query": QUERIES[i % len(QUERIES)], "top_k": 5})
                    dt = (time.perf_counter() - t0) * 1000
                    r.raise_for_status()
                    if i >= 10:
                        latencies.append(dt)
            rss = gw.rss_mib()
            gw.stop()
            print(f"  {n:>8} | {gw.start_seconds:>13.1f} s | {percentile(latencies, 50):>7.1f} | "
                  f"{percentile(latencies, 99):>7.1f} | {statistics.mean(latencies):>7.1f} | {rss:>8.0f} | "
                  f"{(rss - empty_rss) * 100_000 / n:>9.0f} MiB")


def main():
    global ENGINE_NICE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "target/release/sovereign"))
    ap.add_argument("--pdf", default="/tmp/dense300.pdf")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--engine-nice", type=int, default=ENGINE_NICE,
                    help="[documents] engine_nice (0: the engine at the request path's priority)")
    args = ap.parse_args()
    ENGINE_NICE = args.engine_nice
    binary = Path(args.bin)
    key, key_hash = keygen(binary)
    print(f"gateway: {binary} ({os.cpu_count()} cores, engine_nice {ENGINE_NICE})")
    if Path(args.pdf).is_file():
        ingest(binary, Path(args.pdf), key, key_hash, args.runs)
    else:
        print(f"ingestion skipped: {args.pdf} missing (see the header of this script)", file=sys.stderr)
    queries(binary, key, key_hash, [int(s) for s in args.sizes.split(",") if s], args.queries)


if __name__ == "__main__":
    main()
