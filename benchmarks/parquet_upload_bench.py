"""Cost of reading Parquet uploads with bounded memory, against plain `pandas.read_parquet`.

`leaderboard.scores.read_frame` reads the page headers, then the file in batches
with text columns as dictionaries, checking every bound before a batch is
expanded (`leaderboard/scores/parquet.py`). This prints, for scores files of
several shapes, the best-of-N wall time of both readers, their ratio
(bounded / plain), and the peak memory each adds in a fresh child process
(VmHWM after resetting it, so neither the imports nor the other reader's
allocations hide what the read itself takes).

Shapes: the benchmark's largest (50 x 200 pairs), a lab-sized file (1,000,000
rows, 100 settings) with short ids that repeat (the usual case) and with one
id that never repeats (the worst case for dictionaries).

Usage:  .venv/bin/python benchmarks/parquet_upload_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd

_CHILD = """
import io, json, sys
import pandas as pd
from leaderboard.scores import read_frame
def kib(name):
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith(name))
data = sys.stdin.buffer.read()
with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # the high-water mark starts again from here (imports peak higher)
before = kib("VmRSS:")
frame = read_frame(data, "parquet", "s.parquet") if sys.argv[1] == "bounded" else pd.read_parquet(io.BytesIO(data))
print(json.dumps({"rows": len(frame), "peak_mib": (kib("VmHWM:") - before) / 1024}))
"""


def shapes() -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    out = {}
    small = pd.DataFrame({"scene_id": np.repeat([f"stack-q{i:04d}" for i in range(200)], 50),
                          "experience_id": np.tile([f"stack-e{i:03d}" for i in range(50)], 200),
                          "score": rng.normal(size=10_000)})
    n = 1_000_000
    repeated = pd.DataFrame({"setting_id": np.repeat([f"set-{i:03d}" for i in range(100)], n // 100),
                             "scene_id": [f"scene-{i % 2000:05d}" for i in range(n)],
                             "experience_id": [f"exp-{i % 500:04d}" for i in range(n)],
                             "score": rng.normal(size=n)})
    distinct = repeated.assign(experience_id=[f"exp-{i:07d}" for i in range(n)])
    for name, frame in (("50x200", small), ("1M rows, repeated ids", repeated),
                        ("1M rows, distinct ids", distinct)):
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        out[name] = buffer.getvalue()
    return out


def _peak(data: bytes, reader: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, reader], input=data, capture_output=True,
                          check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from leaderboard.scores import read_frame

    print(f"{'file':24} {'plain s':>8} {'bounded s':>9} {'ratio':>6} {'plain MiB':>9} {'bounded MiB':>11}")
    for name, data in shapes().items():
        times = {"plain": [], "bounded": []}
        for _ in range(args.rounds):
            for reader, read in (("plain", lambda: pd.read_parquet(io.BytesIO(data))),
                                 ("bounded", lambda: read_frame(data, "parquet", "s.parquet"))):
                started = time.perf_counter()
                read()
                times[reader].append(time.perf_counter() - started)
        plain, bounded = min(times["plain"]), min(times["bounded"])
        print(f"{name:24} {plain:8.3f} {bounded:9.3f} {bounded / plain:6.2f} "
              f"{_peak(data, 'plain')['peak_mib']:9.0f} {_peak(data, 'bounded')['peak_mib']:11.0f}")


if __name__ == "__main__":
    main()
