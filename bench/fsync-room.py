#!/usr/bin/env python3
"""What an fdatasync costs after a small write, by how the file's room was made (the journal's
"zeroed room", bench/README.md). Usage: bench/fsync-room.py [DIR] (default: the current
directory, which should be on the disk the journal uses). Prints, per mode, the wall time and
the process CPU per write+fdatasync of one 600-byte line, three rounds."""
import ctypes
import os
import sys
import time

N = 3000
LINE = b"x" * 599 + b"\n"
libc = ctypes.CDLL("libc.so.6", use_errno=True)
FALLOC_FL_KEEP_SIZE = 1


def run(path: str, mode: str) -> tuple[float, float]:
    if os.path.exists(path):
        os.unlink(path)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY)
    size = N * len(LINE) + 4096
    if mode == "zeros":
        os.write(fd, b"\0" * size)
        os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_SET)
    elif mode == "keep_size":
        assert libc.fallocate(fd, FALLOC_FL_KEEP_SIZE, ctypes.c_long(0), ctypes.c_long(size)) == 0
        os.fsync(fd)
    elif mode == "posix_fallocate":
        os.posix_fallocate(fd, 0, size)
        os.fsync(fd)
    t, c = time.perf_counter(), os.times()
    for _ in range(N):
        os.write(fd, LINE)
        os.fdatasync(fd)
    wall, c2 = time.perf_counter() - t, os.times()
    os.close(fd)
    os.unlink(path)
    cpu = (c2.system + c2.user) - (c.system + c.user)
    return wall / N * 1e6, cpu / N * 1e6


if __name__ == "__main__":
    path = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "fsync-room.tmp")
    print("µs per write+fdatasync (wall / CPU):")
    for _ in range(3):
        print("  " + "   ".join(f"{m} {w:.0f} / {c:.0f}" for m, (w, c) in
                                ((m, run(path, m)) for m in ("append", "keep_size", "posix_fallocate", "zeros"))))
