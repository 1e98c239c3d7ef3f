#!/usr/bin/env python3
"""Whether overlapping fdatasyncs on one file give more durable points per second on this disk
(the question behind a pipelined journal writer, bench/README.md "Where the rest is"). Usage:
bench/fsync-concurrent.py [DIR] (default: the current directory, which should be on the disk
the journal uses). For 1, 2 and 4 threads, each appending a 600-byte line at its own offset
and then calling fdatasync, for 2 s: fdatasyncs completed per second and their mean and median
wall time; once on a file that grows with each line (the journal as shipped), once inside
zeroed room written ahead (`preallocate_bytes`)."""
import os
import sys
import threading
import time

SECONDS = 2.0
LINE = b"x" * 599 + b"\n"
ROOM = 64 << 20


def run(path: str, threads: int, grow: bool) -> None:
    if os.path.exists(path):
        os.unlink(path)
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    if not grow:
        os.write(fd, b"\0" * ROOM)
        os.fsync(fd)
    lock = threading.Lock()
    next_offset = [0]
    waits: list[float] = []
    stop = time.monotonic() + SECONDS

    def work() -> None:
        mine = []
        while time.monotonic() < stop:
            with lock:
                offset = next_offset[0]
                next_offset[0] += len(LINE)
            os.pwrite(fd, LINE, offset)
            t = time.perf_counter()
            os.fdatasync(fd)  # releases the GIL: the threads' syncs overlap in the kernel
            mine.append(time.perf_counter() - t)
        with lock:
            waits.extend(mine)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    os.close(fd)
    os.unlink(path)
    waits.sort()
    print(
        f"{'grows' if grow else 'zeroed room':<12} threads={threads}  "
        f"fdatasyncs/s={len(waits) / SECONDS:7.0f}  "
        f"mean={sum(waits) / len(waits) * 1e6:5.0f} us  median={waits[len(waits) // 2] * 1e6:5.0f} us"
    )


def main() -> None:
    path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "fsync-concurrent.tmp")
    for grow in (True, False):
        for threads in (1, 2, 4):
            run(path, threads, grow)


if __name__ == "__main__":
    main()
