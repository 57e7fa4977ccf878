"""Time the full audit report against a straightforward loop implementation, and its scaling.

Part 1 (`--part loop`). Setting: a random K = 50 x 200 scenes (40 states x
5 draws) x 5 seeds outcome tensor with random scores; 2,000 shuffles, 2,000
bootstrap resamples, all diagnostics (the paper's K = 50 setting and
defaults).

- `vectorised`: `leaderboard.audit.run_audit` end to end (every metric,
  every diagnostic, the report dict), median of several runs.
- `loop`: the expensive parts only, written the straightforward way: one
  Python iteration per shuffle (x 3 scene subsets), per bootstrap resample
  (resampled scene list built cluster by cluster, statistics recomputed on
  the resampled matrix) and per (positive, negative) pair for pooled and
  within-query AUROC. Everything cheap (reference quantities, concentration,
  diagnostics) is left out of the loop version, so the ratio understates
  the full-report speed-up.

Part 2 (`--part scaling`). The same kind of random setting at lab sizes,
K in {50, 200, 500, 1000} x scenes in {200, 1000, 2000} (5 draws per
state, 5 seeds), full report with the default 2,000 shuffles and 2,000
resamples. Each point runs in a fresh process and prints: the full report's
wall and CPU time (median of `--repeat`; CPU time is what the one core
spends, whatever else the machine runs), the process's peak resident memory (Python,
numpy, the setting and the audit together) and the audit's own traced peak
(tracemalloc); then the within-query AUROC alone, rank-based (current)
against the previous (Q, K, K) comparison-tensor implementation, where that
one's estimated memory fits under `--old-max-gib` (the two must agree
exactly), with the ratio of their CPU times. The last line checks the goal:
K = 1,000 x 2,000 scenes, full report in <= 10 s and <= 1 GiB on one core.

Everything runs on one thread (BLAS threads pinned to 1 before numpy is
imported). Usage: python benchmarks/audit_bench.py [--part all|loop|scaling]
[--repeat 3]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

from leaderboard.audit import run_audit  # noqa: E402
from leaderboard.matrix import SceneTable, TransferData  # noqa: E402
from leaderboard.metrics.ranking import scene_aurocs  # noqa: E402
from lab_reference import tensor_scene_aurocs  # noqa: E402  (benchmarks/, the script's own folder)

K, N_STATES, N_DRAWS, N_SEEDS = 50, 40, 5, 5
N_SHUFFLES = N_BOOTSTRAP = 2000
SCALING_K = (50, 200, 500, 1000)
SCALING_SCENES = (200, 1000, 2000)
TARGET_S, TARGET_BYTES = 10.0, 1 << 30
"""The lab-scale goal: K = 1,000 x 2,000 scenes x 5 seeds, full report, <= 10 s and <= 1 GiB on one core."""


def make_setting(seed: int = 0, k: int = K, n_states: int = N_STATES) -> tuple[TransferData, np.ndarray]:
    """Random outcome tensor with quality and difficulty structure, and random scores.

    Seeds are drawn one (K, Q) slice at a time, so building a lab-sized
    setting adds little to the process's peak memory.
    """
    rng = np.random.default_rng(seed)
    q = n_states * N_DRAWS
    p = np.clip(rng.random((k, 1)) * 0.7 + rng.random((1, q)) * 0.5 - 0.1, 0, 1)
    outcomes = np.empty((k, q, N_SEEDS), dtype=np.int8)
    for s in range(N_SEEDS):
        outcomes[:, :, s] = rng.random((k, q)) < p
    scenes = SceneTable(
        scene_ids=tuple(f"s{j}" for j in range(q)),
        state_ids=np.repeat(np.arange(n_states), N_DRAWS),
        layout_level=np.repeat(rng.integers(0, 4, n_states), N_DRAWS),
        appearance_draw=np.tile(np.arange(N_DRAWS), n_states),
    )
    scores = rng.normal(size=(k, q))
    scores += p
    return TransferData(tuple(f"e{i}" for i in range(k)), scenes, outcomes), scores


# ---------------------------------------------------------------- the loop version


def loop_gap(y, sel, scenes, rng):
    """Gap and envelope, one Python iteration per shuffle."""
    rule = sum(y[sel[q], q] for q in scenes) / len(scenes)
    shuffled = []
    for _ in range(N_SHUFFLES):
        perm = rng.permutation(len(scenes))
        shuffled.append(sum(y[sel[scenes[perm[n]]], q] for n, q in enumerate(scenes)) / len(scenes))
    mean = sum(shuffled) / len(shuffled)
    low, high = np.percentile([s - mean for s in shuffled], [2.5, 97.5])
    return rule - mean, low, high


def loop_auroc(pos, neg):
    """Mann-Whitney by its definition: every (positive, negative) pair."""
    hits = 0.0
    for p, n in itertools.product(pos, neg):
        hits += 1.0 if p > n else 0.5 if p == n else 0.0
    return hits / (len(pos) * len(neg))


def loop_ranking(y, scores):
    k, q = y.shape
    pooled = loop_auroc(
        [scores[i, j] for i in range(k) for j in range(q) if y[i, j] >= 0.8],
        [scores[i, j] for i in range(k) for j in range(q) if y[i, j] <= 0.2],
    )
    per_scene = {}
    for j in range(q):
        pos = [scores[i, j] for i in range(k) if y[i, j] >= 0.8]
        neg = [scores[i, j] for i in range(k) if y[i, j] <= 0.2]
        if pos and neg:
            per_scene[j] = loop_auroc(pos, neg)
    return pooled, per_scene


def loop_bootstrap(y, sel, states, shuffle_scene_mean, per_scene, rng):
    """One iteration per resample: rebuild the resampled scenes, recompute every statistic."""
    clusters = sorted(set(states.tolist()))
    members = {c: [q for q in range(len(states)) if states[q] == c] for c in clusters}
    stats = {"success_rule": [], "advantage": [], "success_best_fixed": [], "gap": [], "within": []}
    for _ in range(N_BOOTSTRAP):
        scenes = [q for c in rng.choice(clusters, len(clusters)) for q in members[c]]
        sub = y[:, scenes]
        rule = np.mean([y[sel[q], q] for q in scenes])
        random, oracle = sub.mean(), sub.max(axis=0).mean()
        stats["success_rule"].append(rule)
        stats["advantage"].append((rule - random) / (oracle - random))
        stats["success_best_fixed"].append(sub.mean(axis=1).max())
        stats["gap"].append(np.mean([y[sel[q], q] - shuffle_scene_mean[q] for q in scenes]))
        eligible = [per_scene[q] for q in scenes if q in per_scene]
        stats["within"].append(np.mean(eligible))
    return {name: np.percentile(values, [2.5, 97.5]) for name, values in stats.items()}


def run_loop(data, scores):
    """The expensive parts of the audit, written as loops; returns part timings and results."""
    rng = np.random.default_rng(0)
    y = data.success_matrix()
    sel = np.argmax(scores, axis=0)
    layout, draws = data.scenes.layout_level, data.scenes.appearance_draw
    subsets = [
        list(range(y.shape[1])),
        [q for q in range(len(layout)) if layout[q] == 0],
        [q for q in range(len(layout)) if draws[q] == 0 and layout[q] >= 1],
    ]
    timings, t0 = {}, time.perf_counter()
    gaps = [loop_gap(y, sel, scenes, rng) for scenes in subsets]
    timings["shuffles"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pooled, per_scene = loop_ranking(y, scores)
    timings["auroc"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    shuffle_scene_mean = np.full(y.shape[1], y.mean())  # stand-in; the per-scene shuffle means cost the same
    intervals = loop_bootstrap(y, sel, data.scenes.state_ids, shuffle_scene_mean, per_scene, rng)
    timings["bootstrap"] = time.perf_counter() - t0
    return timings, gaps, pooled, np.mean(list(per_scene.values())), intervals


# ---------------------------------------------------------------- the previous within-query AUROC


def tensor_bytes(k: int, q: int) -> int:
    """Estimated peak of `tensor_scene_aurocs`: two bool and one float64 (Q, K, K) array."""
    return 10 * q * k * k


# ---------------------------------------------------------------- scaling


def _traced_peak(function, *args, **kwargs) -> int:
    """Peak bytes numpy and Python allocate while `function` runs (tracemalloc)."""
    tracemalloc.start()
    try:
        function(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_point(k: int, n_scenes: int, repeat: int, old_max_bytes: int) -> dict:
    """One point of the curve, measured in this (fresh) process."""
    data, scores = make_setting(seed=k + n_scenes, k=k, n_states=n_scenes // N_DRAWS)
    run_audit(data, scores, n_shuffles=10, n_bootstrap=10)  # warm-up (imports, caches)
    times, cpu_times = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        run_audit(data, scores, n_shuffles=N_SHUFFLES, n_bootstrap=N_BOOTSTRAP, seed=0).to_dict()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    point = {
        "k": k,
        "scenes": n_scenes,
        "report_s": statistics.median(times),
        "report_cpu_s": statistics.median(cpu_times),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "report_traced_bytes": _traced_peak(lambda: run_audit(data, scores).to_dict()),
    }
    y = data.success_matrix()
    c0 = time.process_time()
    auroc, _ = scene_aurocs(y, scores)
    point["auroc_s"] = time.process_time() - c0
    point["auroc_traced_bytes"] = _traced_peak(scene_aurocs, y, scores)
    if tensor_bytes(k, n_scenes) <= old_max_bytes:
        c0 = time.process_time()
        expected, _ = tensor_scene_aurocs(y, scores)
        point["old_auroc_s"] = time.process_time() - c0
        point["old_auroc_traced_bytes"] = _traced_peak(tensor_scene_aurocs, y, scores)
        point["auroc_identical"] = bool(np.array_equal(auroc, expected, equal_nan=True))
    return point


def run_scaling(repeat: int, old_max_gib: float) -> None:
    """Every point in a fresh process (peak memory is per process); print the table."""
    mib = 1024 * 1024
    print(
        f"scaling: random settings, 5 draws per state, {N_SEEDS} seeds, {N_SHUFFLES} shuffles, "
        f"{N_BOOTSTRAP} bootstrap resamples, one thread; report = median of {repeat} full reports, "
        "wall and CPU seconds (CPU is what one core spends, whatever else runs on the machine); "
        "AUROC columns in CPU seconds"
    )
    print(
        f"{'K':>5} {'scenes':>6} | {'wall s':>7} {'CPU s':>6} {'peak RSS MiB':>12} {'traced MiB':>10} | "
        f"{'AUROC s':>8} {'MiB':>6} | {'old AUROC s':>11} {'old MiB':>8} {'old/new':>8} {'same':>5}"
    )
    points = []
    for k, n_scenes in itertools.product(SCALING_K, SCALING_SCENES):
        command = [sys.executable, __file__, "--point", str(k), str(n_scenes), "--repeat", str(repeat),
                   "--old-max-gib", str(old_max_gib)]
        point = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        points.append(point)
        old = (
            f"{point['old_auroc_s']:11.3f} {point['old_auroc_traced_bytes'] / mib:8.0f} "
            f"{point['old_auroc_s'] / point['auroc_s']:7.1f}x {str(point['auroc_identical']):>5}"
            if "old_auroc_s" in point
            else f"{'(does not fit in ' + format(old_max_gib, 'g') + ' GiB)':>35}"
        )
        print(
            f"{k:5d} {n_scenes:6d} | {point['report_s']:7.3f} {point['report_cpu_s']:6.3f} "
            f"{point['peak_rss_bytes'] / mib:12.0f} "
            f"{point['report_traced_bytes'] / mib:10.0f} | {point['auroc_s']:8.3f} "
            f"{point['auroc_traced_bytes'] / mib:6.0f} | {old}",
            flush=True,
        )
    if any(p.get("auroc_identical") is False for p in points):
        raise SystemExit("within-query AUROC differs from the previous implementation")
    top = next(p for p in points if (p["k"], p["scenes"]) == (max(SCALING_K), max(SCALING_SCENES)))
    verdict = "meets" if top["report_cpu_s"] <= TARGET_S and top["peak_rss_bytes"] <= TARGET_BYTES else "MISSES"
    print(
        f"K={top['k']} x {top['scenes']} scenes x {N_SEEDS} seeds, full report: {top['report_cpu_s']:.2f} s "
        f"CPU ({top['report_s']:.2f} s wall), peak RSS {top['peak_rss_bytes'] / mib:.0f} MiB ({verdict} "
        f"the target of <= {TARGET_S:g} s and <= {TARGET_BYTES / mib:.0f} MiB on one core)"
    )


# ---------------------------------------------------------------- main


def run_loop_comparison(repeat: int) -> None:
    """Part 1: the K = 50 report against the loop version."""
    data, scores = make_setting()
    run_audit(data, scores, n_shuffles=50, n_bootstrap=50)  # warm-up (imports, caches)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        report = run_audit(data, scores, n_shuffles=N_SHUFFLES, n_bootstrap=N_BOOTSTRAP, seed=0).to_dict()
        times.append(time.perf_counter() - t0)
    vectorised = statistics.median(times)
    t0 = time.perf_counter()
    timings, gaps, pooled, within, _ = run_loop(data, scores)
    loop = time.perf_counter() - t0
    ranking = report["ranking"]
    if abs(ranking["pooled_auroc"] - pooled) > 1e-6 or abs(ranking["within_query_auroc"] - within) > 1e-6:
        raise SystemExit(
            f"AUROC mismatch: vectorised {ranking['pooled_auroc']}, "
            f"{ranking['within_query_auroc']}; loop {pooled}, {within}"
        )
    print(
        f"setting: K={K} x {N_STATES * N_DRAWS} scenes x {N_SEEDS} seeds, "
        f"{N_SHUFFLES} shuffles, {N_BOOTSTRAP} bootstrap resamples, one thread"
    )
    print(
        f"vectorised full report (all metrics and diagnostics): {vectorised:.3f} s "
        f"(median of {repeat}; min {min(times):.3f} s)"
    )
    print(
        f"loop version (shuffles, bootstrap, AUROC only): {loop:.3f} s "
        f"(shuffles {timings['shuffles']:.2f} s, bootstrap {timings['bootstrap']:.2f} s, "
        f"AUROC {timings['auroc']:.2f} s)"
    )
    print(f"gap all: vectorised {report['gap']['all']['gap']:+.4f}, loop {gaps[0][0]:+.4f} (different draws)")
    print(f"ratio loop / vectorised: {loop / vectorised:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "loop", "scaling"), default="all")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each full report")
    parser.add_argument("--old-max-gib", type=float, default=3.0,
                        help="run the previous within-query AUROC where its estimated memory fits under this")
    parser.add_argument("--point", type=int, nargs=2, metavar=("K", "SCENES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        point = measure_point(*args.point, args.repeat, int(args.old_max_gib * (1 << 30)))
        print(json.dumps(point))
        return
    if args.part in ("all", "loop"):
        run_loop_comparison(args.repeat)
    if args.part in ("all", "scaling"):
        if args.part == "all":
            print()
        run_scaling(args.repeat, args.old_max_gib)


if __name__ == "__main__":
    main()
