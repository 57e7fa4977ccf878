"""Time from a readout features upload to its published report, against a retrieval scores upload.

One real stack serves both tracks: Debian's redis-server, gunicorn with `service.web.app`
(the `expaudit serve` settings), one service worker (`expaudit worker`) and a
local-directory store. Submissions alternate, one at a time, between

- a retrieval scores file on a synthetic K=50 setting (`api_bench.synthetic_setting`:
  200 scenes, 5 seeds; the API benchmark's latency target is p50 <= 3 s), and
- a readout features file (NPZ) on `door-readout-v1`: the published Door bank with its
  `raw32` reference features (3072 a row) where its sealed labels are installed
  (`EXPAUDIT_READOUT_SEALED`, docs/readout.md), else a copy of it whose `dev` split (16
  initializations, public labels) stands in as `confirm` (the script says which).

Each time is POST to `published` (the status polled every 50 ms): the upload's check in
the web process, the queued audit (the readout engine with 2000 bootstrap resamples, or
the retrieval audit), the report and the leaderboard rebuild. The first of each kind is a
warm-up (caches, reference reports) and reported apart; then p50 and p95 over `--rounds`
pairs, and the ratio of the readout p50 to the retrieval p50 measured side by side.

Usage:  .venv/bin/python benchmarks/readout_upload_bench.py [--rounds 5] [--json results.json]
"""

from __future__ import annotations

import argparse
import io
import json
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pandas as pd
import requests

from api_bench import (GUNICORN_FLAGS, POLL_S, ROOT, SETTING_ID, VENV_BIN, Process, create_token,
                       free_port, scores_csv, service_env, started, synthetic_setting)
from benchmark_data.readout_banks import bank_dir, sealed_dir, sealed_labels_path

READOUT = "door-readout-v1"
REFERENCE = "raw32"
"""The published bank's representation uploaded (its features of every split, as shipped)."""


def _reference_features(ids_kept=None) -> tuple[np.ndarray, np.ndarray]:
    """The published Door bank's `REFERENCE` features (every shard), optionally only `ids_kept`."""
    ids, values = [], []
    for shard in sorted((bank_dir("door") / "features" / REFERENCE).glob("features-*.npz")):
        with np.load(shard) as z:
            ids.append(z["observation_id"].astype(str))
            values.append(z["features"])
    ids, values = np.concatenate(ids), np.concatenate(values)
    if ids_kept is not None:
        keep = np.isin(ids, np.asarray(list(ids_kept), dtype=str))
        ids, values = ids[keep], values[keep]
    return ids, values


def readout_data(workdir: Path) -> tuple[Path, Path, bytes, str]:
    """(frozen root, sealed directory, the features upload, which bank) of the readout setting.

    With door-v1's sealed labels installed: the published bank as it is. Without them: a copy
    of it whose `dev` split stands in as `confirm` (its public labels sealed in a directory of
    the run; `train` as published; the real confirm and eval rows left out), so the audit
    runs on the published bank's structure and the reference's real features.
    """
    if sealed_labels_path("door", sealed_dir()).is_file():
        upload = _npz(*_reference_features())
        return bank_dir("door").parent.parent, sealed_dir(), upload, f"published door-v1, {REFERENCE} features"
    source = bank_dir("door")
    frozen, sealed = workdir / "frozen", workdir / "sealed"
    bank = frozen / "readout" / "door-v1"
    bank.mkdir(parents=True)
    sealed.mkdir()
    info = json.loads((source / "bank.json").read_text())
    info.pop("sealed_labels_sha256", None)
    (bank / "bank.json").write_text(json.dumps(info))
    observations = pd.read_parquet(source / "observations.parquet")
    observations = observations[observations["split"].isin(["train", "dev"])]
    observations = observations.assign(split=observations["split"].replace({"dev": "confirm"}))
    observations.to_parquet(bank / "observations.parquet", index=False)
    labels = pd.read_parquet(source / "labels.parquet")
    labels[labels["split"] == "train"].to_parquet(bank / "labels.parquet", index=False)
    standin = labels[labels["split"] == "dev"].assign(split="confirm")
    standin.to_parquet(sealed / "door-v1-labels.parquet", index=False)
    upload = _npz(*_reference_features(observations["observation_id"]))
    return frozen, sealed, upload, (f"published door-v1 structure, {REFERENCE} features, dev standing in as "
                                    "confirm (the sealed labels are not installed here)")


def _npz(ids: np.ndarray, values: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, observation_id=ids.astype(str), features=values)
    return buffer.getvalue()


def start(stack: ExitStack, workdir: Path, frozen: Path, sealed: Path) -> tuple[str, str]:
    """Redis, gunicorn and one worker serving both tracks; returns (base URL, admin token)."""
    redis_port, web_port = free_port(), free_port()
    (workdir / "redis").mkdir()
    started(stack, Process("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no", "--dir", str(workdir / "redis")],
                           workdir), redis_port)
    admin = "ea_admin_" + secrets.token_urlsafe(24)
    env = {**service_env(workdir, f"redis://127.0.0.1:{redis_port}/0", admin),
           "EXPAUDIT_FROZEN_ROOT": str(frozen), "EXPAUDIT_READOUT_SEALED": str(sealed),
           "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY": "1000"}
    started(stack, Process("web", [str(VENV_BIN / "gunicorn"), *GUNICORN_FLAGS, "--bind",
                                   f"127.0.0.1:{web_port}", "service.web.app:create_app()"],
                           workdir, env, ROOT), web_port)
    started(stack, Process("worker", [str(VENV_BIN / "expaudit"), "worker"], workdir, env, ROOT))
    return f"http://127.0.0.1:{web_port}", admin


def published_after(base: str, token: str, files: dict, fields: dict, timeout: float = 900) -> float:
    """POST one upload and poll until published; the seconds it took."""
    headers = {"Authorization": f"Bearer {token}"}
    begin = time.perf_counter()
    response = requests.post(f"{base}/api/v1/submissions", headers=headers, timeout=120, files=files, data=fields)
    if response.status_code != 202:
        raise RuntimeError(f"upload refused: {response.status_code} {response.text[:500]}")
    sid = response.json()["id"]
    while time.perf_counter() - begin < timeout:
        state = requests.get(f"{base}/api/v1/submissions/{sid}", headers=headers, timeout=30).json()
        if state["state"] == "published":
            return time.perf_counter() - begin
        if state["state"] == "failed":
            raise RuntimeError(f"submission {sid} failed: {state}")
        time.sleep(POLL_S)
    raise RuntimeError(f"submission {sid} not published after {timeout} s")


def _summary(times: list[float]) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(np.ceil(0.95 * len(ordered))) - 1)]
    return {"n": len(times), "p50_s": statistics.median(times), "p95_s": p95, "max_s": max(times)}


def run(args: argparse.Namespace, workdir: Path) -> dict:
    data = synthetic_setting(workdir / "catalog")
    frozen, sealed, features, which = readout_data(workdir)
    with ExitStack() as stack:
        base, admin = start(stack, workdir, frozen, sealed)
        token = create_token(base, admin)

        def retrieval(seed: int) -> float:
            return published_after(base, token, {"file": ("scores.csv", scores_csv(data, seed), "text/csv")},
                                   {"setting": SETTING_ID, "name": f"bench {seed}"})

        def readout(round_: int) -> float:
            return published_after(base, token, {"file": ("features.npz", features, "application/octet-stream")},
                                   {"setting": READOUT, "name": f"{REFERENCE} {round_}", "input": "features"})

        warmup = {"retrieval_s": retrieval(1000), "readout_s": readout(1000)}
        times = {"retrieval": [], "readout": []}
        for i in range(args.rounds):
            times["retrieval"].append(retrieval(i))
            times["readout"].append(readout(i))
    out = {"bank": which, "features_bytes": len(features), "warmup": warmup,
           "retrieval": _summary(times["retrieval"]), "readout": _summary(times["readout"])}
    out["ratio_p50"] = out["readout"]["p50_s"] / out["retrieval"]["p50_s"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="measured pairs after the warm-up")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, store)")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        print("redis-server is needed", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="expaudit-readout-bench-"))
    try:
        result = run(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"readout bank: {result['bank']}; features upload {result['features_bytes']:,} bytes")
    print(f"warm-up: retrieval {result['warmup']['retrieval_s']:.2f} s, readout {result['warmup']['readout_s']:.2f} s")
    for kind in ("retrieval", "readout"):
        r = result[kind]
        print(f"{kind:<9} upload -> published: p50 {r['p50_s']:.2f} s, p95 {r['p95_s']:.2f} s, "
              f"max {r['max_s']:.2f} s (n = {r['n']})")
    print(f"readout / retrieval (p50): {result['ratio_p50']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
