"""Starts `$SOVEREIGN_BIN demo` once per session (and once more with `--tls` for the TLS test),
reads its key lines and address, and hands out clients per role (clients/SPEC.md, "Tests")."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from sovereign_gateway import Sovereign

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("SOVEREIGN_BIN", REPO / "target" / "debug" / "sovereign"))
START_DEADLINE = 60.0


@dataclass
class Demo:
    url: str
    keys: Dict[str, str]
    data_dir: Path
    proc: subprocess.Popen
    ca: Optional[Path] = None
    output: List[str] = field(default_factory=list)

    def client(self, role: str, **kwargs) -> Sovereign:
        return Sovereign(base_url=self.url, api_key=self.keys[role], **kwargs)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_demo(data_dir: Path, tls: bool = False) -> Demo:
    if not BIN.exists():
        pytest.fail(f"no gateway binary at {BIN} (set SOVEREIGN_BIN or build it)")
    args = [str(BIN), "demo", "--listen", f"127.0.0.1:{_free_port()}", "--data-dir", str(data_dir)]
    if tls:
        args.append("--tls")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: "queue.Queue[Optional[str]]" = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    keys: Dict[str, str] = {}
    ca: Optional[Path] = None
    seen: List[str] = []
    deadline = time.monotonic() + START_DEADLINE
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            proc.kill()
            pytest.fail(f"the demo did not say `listening on` within {START_DEADLINE}s: {seen}")
        if line is None:
            pytest.fail(f"the demo exited ({proc.wait()}) before listening: {seen}")
        seen.append(line)
        words = line.split()
        if line.startswith("key ") and len(words) == 3:
            keys[words[1]] = words[2]
        elif line.startswith("tls ca "):
            ca = Path(line[len("tls ca "):])
        elif line.startswith("listening on "):
            demo = Demo(url=words[2], keys=keys, data_dir=data_dir, proc=proc, ca=ca, output=seen)
            assert {"admin", "member", "auditor"} <= set(keys), seen
            return demo


def stop_demo(demo: Demo) -> None:
    demo.proc.terminate()
    try:
        demo.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        demo.proc.kill()
        demo.proc.wait()


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    d = start_demo(tmp_path_factory.mktemp("demo"))
    yield d
    stop_demo(d)


@pytest.fixture(scope="session")
def tls_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    d = start_demo(tmp_path_factory.mktemp("demo-tls"), tls=True)
    yield d
    stop_demo(d)


@pytest.fixture(scope="session")
def admin(demo: Demo) -> Sovereign:
    return demo.client("admin")


@pytest.fixture(scope="session")
def member(demo: Demo) -> Sovereign:
    return demo.client("member")


@pytest.fixture(scope="session")
def auditor(demo: Demo) -> Sovereign:
    return demo.client("auditor")
