"""Undoes the CPU pinning it was started with: asks for every CPU of the host."""
import os

before = sorted(os.sched_getaffinity(0))
try:
    os.sched_setaffinity(0, range(os.cpu_count()))
except OSError as exc:
    print(f"widening refused: {exc}")
print(f"cpus before {before} after {sorted(os.sched_getaffinity(0))}")
