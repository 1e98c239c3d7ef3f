#!/usr/bin/env python3
"""ONNX Runtime's own time for the e5 graph the gateway runs (models/e5/e5-small-fp32.onnx), for
comparison with the gateway's engine (`cargo run --release -p sovereign-retrieval --example bench
-- --engine-only`): one 512-token window and one 20-token query, median of N runs, with the same
session options (intra-op threads, no spinning). The inputs are random rows (the time does not
depend on the values). Needs numpy and onnxruntime 1.31.1 (the wheel setup-models takes
libonnxruntime.so from), e.g. `models/.cache/onnx-venv/bin/pip install onnxruntime==1.31.1`.

    python bench/e5_ort_reference.py [--threads 1] [--runs 10]
"""

import argparse
import pathlib
import time

import numpy as np
import onnxruntime as ort

GRAPH = pathlib.Path(__file__).resolve().parent.parent / "models" / "e5" / "e5-small-fp32.onnx"


def median_ms(session, tokens: int, runs: int) -> float:
    rng = np.random.default_rng(0)
    feed = {"inputs_embeds": (rng.standard_normal((1, tokens, 384)) * 0.05).astype(np.float32),
            "attention_mask": np.ones((1, tokens), np.float32)}
    session.run(None, feed)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t)
    return 1000 * sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    session = ort.InferenceSession(str(GRAPH), options)
    print(f"onnxruntime {ort.__version__}, {args.threads} thread(s)")
    print(f"one window of 512 tokens: median {median_ms(session, 512, args.runs):.1f} ms wall")
    print(f"a 20-token query: median {median_ms(session, 20, args.runs * 5):.2f} ms wall")


if __name__ == "__main__":
    main()
