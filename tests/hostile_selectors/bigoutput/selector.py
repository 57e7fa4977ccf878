"""Writes 10 GB to /output/scores.csv, then claims success."""
import os

chunk = b"x" * (1 << 20)
written = 0
try:
    with open(os.path.join(os.environ["EXPAUDIT_OUTPUT"], "scores.csv"), "wb") as handle:
        for _ in range(10 * 1024):
            handle.write(chunk)
            written += len(chunk)
except OSError as exc:
    print(f"stopped after {written} bytes: {exc}", flush=True)
raise SystemExit(0)
