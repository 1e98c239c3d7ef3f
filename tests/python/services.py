"""Private PostgreSQL and Redis servers for the tests of the scale-out back end (issue 17).

Each is started from the machine's Debian binaries on a free port in a temporary directory, so a
test may kill and restart it; the services on the standard ports are never touched. PostgreSQL's
`initdb` refuses to run as root: as root, its binaries run as the `postgres` user.

`SOVEREIGN_TEST_BACKEND=postgres` runs the whole suite on PostgreSQL + Redis: `backend_env(dir)`
gives a gateway started in `dir` its own database and Redis namespace (the same ones every time
that directory is used again, so a restarted gateway finds its state).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BACKEND = os.environ.get("SOVEREIGN_TEST_BACKEND", "sqlite")
if BACKEND not in ("sqlite", "postgres"):
    raise SystemExit(f"SOVEREIGN_TEST_BACKEND must be sqlite or postgres, not {BACKEND!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin() -> Path:
    root = Path("/usr/lib/postgresql")
    versions = sorted((p for p in root.iterdir() if (p / "bin" / "initdb").exists()),
                      key=lambda p: int(p.name) if p.name.isdigit() else 0) if root.exists() else []
    if not versions:
        raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql "
                           "(Debian: apt-get install postgresql)")
    return versions[-1] / "bin"


def _as_postgres(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


class PrivatePostgres:
    """`initdb` + `pg_ctl` on a free port; `stop`/`start` keep the data (a restart test)."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="sov-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.data = self.dir / "data"
        self.port = free_port()
        self.bin = _pg_bin()
        subprocess.run(_as_postgres([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust",
                                     "-U", "postgres", "--no-sync", "-E", "UTF8"]),
                       check=True, capture_output=True)
        self.start()
        self._databases: set[str] = set()

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c max_connections=400 -c shared_buffers=32MB")
        subprocess.run(_as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", opts,
                                     "-l", str(self.dir / "log"), "-w", "-t", "30", "start"]),
                       check=True, capture_output=True)

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(_as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode,
                                     "-w", "stop"]), capture_output=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def database(self, name: str) -> str:
        """The URL of database `name`, created on first use."""
        if name not in self._databases:
            subprocess.run(["psql", "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                            "-d", "postgres", "-c", f'CREATE DATABASE "{name}"'],
                           check=True, capture_output=True)
            self._databases.add(name)
        return self.url(name)

    def close(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRedis:
    """`redis-server` on a free port, nothing on disk; `kill`/`start` on the same port."""

    def __init__(self):
        if not shutil.which("redis-server"):
            raise RuntimeError("redis-server not found (Debian: apt-get install redis-server)")
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
                                      "--save", "", "--appendonly", "no", "--maxclients", "2000"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/"

    def close(self) -> None:
        self.kill()


_pg: PrivatePostgres | None = None
_redis: PrivateRedis | None = None


def postgres() -> PrivatePostgres:
    """The session's private PostgreSQL (started on first use, stopped at exit)."""
    global _pg
    if _pg is None:
        _pg = PrivatePostgres()
        atexit.register(_pg.close)
    return _pg


def redis() -> PrivateRedis:
    global _redis
    if _redis is None:
        _redis = PrivateRedis()
        atexit.register(_redis.close)
    return _redis


def name_for(directory: Path) -> str:
    return "g" + hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:20]


def backend_env(directory: Path) -> dict[str, str]:
    """The environment that puts a gateway started in `directory` on the suite's back end: none
    for SQLite; else its own database and namespace on the session's PostgreSQL and Redis."""
    if BACKEND == "sqlite":
        return {}
    name = name_for(directory)
    return {"SOVEREIGN_STORE_URL": postgres().database(name), "SOVEREIGN_REDIS_URL": redis().url(),
            "SOVEREIGN_SHARED_NAMESPACE": name}
