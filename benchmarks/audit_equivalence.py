"""Check that the audit gives the same report as an earlier revision of the code.

Cases: each of the benchmark's 13 public settings under its reference rules
that need no images (oracle, best-fixed, recency, track record, and for
Stack the structural rules) plus random and heavily tied random scores;
and random lab-sized matrices up to K = 200 x 1,000 scenes. Every report
uses the default 2,000 shuffles and 2,000 bootstrap resamples.

The earlier revision's reports are computed in a subprocess that imports
the code of `git archive <rev>` (the `--against` revision, e.g. the commit
before the chunked metrics); this process computes the current reports
twice, with the default block size and with a tiny one (`--tiny-chunk`,
hundreds of blocks per metric). The JSON reports (floats rounded to six
decimals) must be identical.

Usage: python benchmarks/audit_equivalence.py --against <rev>
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from lab_reference import random_lab_setting  # noqa: E402  (benchmarks/, the script's own folder)

REPO = Path(__file__).resolve().parent.parent
SYNTHETIC = ((50, 40), (120, 60), (200, 100), (100, 200))
"""(K, states) of the random matrices; 5 appearance draws per state."""


def cases():
    """(name, data, scores, selection_only) of every case, in a fixed order."""
    from benchmark_data.frozen import load_transfer
    from benchmark_data.registry import SETTINGS
    from leaderboard.rules.simple import SCORED_RULES

    for setting in SETTINGS.values():
        if setting.sealed:
            continue
        data = load_transfer(setting.id)
        if not data.is_complete:
            continue
        k, q = data.outcomes.shape[:2]
        rng = np.random.default_rng(len(setting.id))
        for name in ("oracle", "best_fixed", "recency", "track_record"):
            rule = SCORED_RULES[name]
            yield f"{setting.id}/{name}", data, rule.scores(data), rule.selection_only
        if setting.task == "stack":
            from leaderboard.rules.structural import structural_rule_scores

            for name, scores in structural_rule_scores(setting, data).items():
                yield f"{setting.id}/{name}", data, scores, False
        yield f"{setting.id}/random", data, rng.normal(size=(k, q)), False
        yield f"{setting.id}/tied", data, rng.integers(0, 3, (k, q)).astype(float), False
    for k, n_states in SYNTHETIC:
        data, p, _ = random_lab_setting(k, n_states, seed=k + n_states)
        rng = np.random.default_rng(k)
        yield f"random-k{k}-q{5 * n_states}", data, rng.normal(size=p.shape) + p, False
        yield f"tied-k{k}-q{5 * n_states}", data, np.round(rng.normal(size=p.shape) + 2 * p), False


def reports() -> dict[str, str]:
    """Every case's JSON report, as text (sorted keys), computed by the imported code."""
    from leaderboard.audit import run_audit

    out = {}
    for name, data, scores, selection_only in cases():
        report = run_audit(data, scores, selection_only=selection_only).to_dict()
        out[name] = json.dumps(report, sort_keys=True)
    return out


def earlier_reports(revision: str) -> dict[str, str]:
    """The reports of `revision`'s code, computed in a subprocess that imports it."""
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        output = Path(tree) / "reports.json"
        env = dict(os.environ, PYTHONPATH=tree)
        subprocess.run([sys.executable, __file__, "--dump", str(output)], check=True, env=env, cwd=tree)
        return json.loads(output.read_text())


def compare(label: str, expected: dict[str, str], actual: dict[str, str]) -> int:
    """Print and count the cases whose reports differ."""
    differing = [name for name in expected if actual.get(name) != expected[name]]
    missing = sorted(set(expected) ^ set(actual))
    print(f"{label}: {len(expected) - len(differing)} of {len(expected)} reports identical"
          + (f"; cases only on one side: {missing}" if missing else ""))
    for name in differing:
        old, new = json.loads(expected[name]), json.loads(actual[name])
        keys = [key for key in old if old[key] != new.get(key)]
        print(f"  differs: {name} (top-level keys {keys})")
    return len(differing) + len(missing)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="git revision whose code gives the expected reports")
    parser.add_argument("--tiny-chunk", type=int, default=97, help="block size of the second current run")
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        Path(args.dump).write_text(json.dumps(reports()))
        return
    if not args.against:
        parser.error("--against REV is required")
    t0 = time.perf_counter()
    expected = earlier_reports(args.against)
    t1 = time.perf_counter()
    current = reports()
    t2 = time.perf_counter()
    from leaderboard.metrics import chunking

    chunking.CHUNK_ELEMENTS = args.tiny_chunk
    tiny = reports()
    t3 = time.perf_counter()
    print(f"{len(expected)} cases; {args.against}: {t1 - t0:.1f} s, current: {t2 - t1:.1f} s, "
          f"current with {args.tiny_chunk}-element blocks: {t3 - t2:.1f} s")
    failures = compare(f"current vs {args.against}", expected, current)
    failures += compare(f"current ({args.tiny_chunk}-element blocks) vs {args.against}", expected, tiny)
    if failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
