"""Time the full audit report against a straightforward loop implementation.

Setting: a random K = 50 x 200 scenes (40 states x 5 draws) x 5 seeds
outcome tensor with random scores; 2,000 shuffles, 2,000 bootstrap
resamples, all diagnostics (the paper's K = 50 setting and defaults).

- `vectorised`: `leaderboard.audit.run_audit` end to end (every metric,
  every diagnostic, the report dict), median of several runs.
- `loop`: the expensive parts only, written the straightforward way: one
  Python iteration per shuffle (x 3 scene subsets), per bootstrap resample
  (resampled scene list built cluster by cluster, statistics recomputed on
  the resampled matrix) and per (positive, negative) pair for pooled and
  within-query AUROC. Everything cheap (reference quantities, concentration,
  diagnostics) is left out of the loop version, so the ratio understates
  the full-report speed-up.

Both run in this process on one thread (BLAS threads pinned to 1 before
numpy is imported). Usage: python benchmarks/audit_bench.py [--repeat 5]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from leaderboard.audit import run_audit  # noqa: E402
from leaderboard.matrix import SceneTable, TransferData  # noqa: E402

K, N_STATES, N_DRAWS, N_SEEDS = 50, 40, 5, 5
N_SHUFFLES = N_BOOTSTRAP = 2000


def make_setting(seed: int = 0) -> tuple[TransferData, np.ndarray]:
    """Random outcome tensor with quality and difficulty structure, and random scores."""
    rng = np.random.default_rng(seed)
    q = N_STATES * N_DRAWS
    p = np.clip(rng.random((K, 1)) * 0.7 + rng.random((1, q)) * 0.5 - 0.1, 0, 1)
    outcomes = (rng.random((K, q, N_SEEDS)) < p[..., None]).astype(np.int8)
    scenes = SceneTable(
        scene_ids=tuple(f"s{j}" for j in range(q)),
        state_ids=np.repeat(np.arange(N_STATES), N_DRAWS),
        layout_level=np.repeat(rng.integers(0, 4, N_STATES), N_DRAWS),
        appearance_draw=np.tile(np.arange(N_DRAWS), N_STATES),
    )
    return TransferData(tuple(f"e{i}" for i in range(K)), scenes, outcomes), rng.normal(size=(K, q)) + p


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


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of the vectorised report")
    args = parser.parse_args()
    data, scores = make_setting()
    run_audit(data, scores, n_shuffles=50, n_bootstrap=50)  # warm-up (imports, caches)
    times = []
    for _ in range(args.repeat):
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
        f"(median of {args.repeat}; min {min(times):.3f} s)"
    )
    print(
        f"loop version (shuffles, bootstrap, AUROC only): {loop:.3f} s "
        f"(shuffles {timings['shuffles']:.2f} s, bootstrap {timings['bootstrap']:.2f} s, "
        f"AUROC {timings['auroc']:.2f} s)"
    )
    print(f"gap all: vectorised {report['gap']['all']['gap']:+.4f}, loop {gaps[0][0]:+.4f} (different draws)")
    print(f"ratio loop / vectorised: {loop / vectorised:.1f}x")


if __name__ == "__main__":
    main()
