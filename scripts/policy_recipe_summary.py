#!/usr/bin/env python
"""Gather recipe-trial summaries into benchmark_data/validation/recipe_trials.json.

    scripts/policy_recipe_summary.py WORKDIR [WORKDIR ...]
    scripts/policy_recipe_summary.py --setting WORKDIR WORKDIR WORKDIR   # K policies as one setting

Each WORKDIR is a `scripts/policy_recipe_trial.py --workdir`; its
`recipe.summary.json` and `frozen.summary.json` (whichever exist) become one
entry each: the command, commit and source hash that made it, the demonstrations
and training it used, and success per episode group as [successes, episodes]
with the rate, checked against the pre-registered gates (docs/policy_protocol.md).
Entries of the same (policy, experience, mechanism, command) are replaced.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "benchmark_data" / "validation" / "recipe_trials.json"
KEEP = ("experience_id", "mechanism", "validation_set", "seed", "command", "commit", "sources_sha256", "demos",
        "demo_tries", "frames", "spec", "final_losses", "train_wall_s", "groups", "validation_levels")


def _rate(pair):
    return round(pair[0] / pair[1], 3) if pair and pair[1] else None


def gates(summary: dict) -> dict:
    """The pre-registered gates measured so far (None while a group has no episode)."""
    groups = summary.get("groups", {})
    own, d0, dr = (_rate(groups.get(k)) for k in ("own", "draw 0", "draws 1-4"))
    out = {"own >= 0.8 (n >= 20)": None if own is None else own >= 0.8 and groups["own"][1] >= 20}
    if summary.get("mechanism") == "policy":
        out["draw 0 >= 0.5"] = None if d0 is None else d0 >= 0.5
        out["draws 1-4 >= 0.2"] = None if dr is None else dr >= 0.2
    else:
        out["draws 1-4 within 0.1 of draw 0"] = None if d0 is None or dr is None else abs(dr - d0) <= 0.1
    return out


def _trial_module():
    import importlib.util

    path = Path(__file__).resolve().parent / "policy_recipe_trial.py"
    spec = importlib.util.spec_from_file_location("policy_recipe_trial", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_command(command: str) -> str:
    """The trial's command with its scratch folder replaced by WORKDIR (no machine path is published)."""
    words = command.split()
    return " ".join("WORKDIR" if i and words[i - 1] == "--workdir" else w for i, w in enumerate(words))


def entry(path: Path) -> dict:
    """One trial's published entry; `commit` is the recorded one, or this tree's HEAD when the trial's
    sources hash equals this tree's (the trial reproduces from this commit)."""
    summary = json.loads(path.read_text())
    item = {"policy": "published" if path.name.startswith("frozen") else "recipe"}
    item.update({k: summary[k] for k in KEEP if k in summary})
    item["command"] = public_command(item.get("command", ""))
    trial = _trial_module()
    if summary.get("sources_sha256") == trial.sources_sha256():
        item["commit"] = trial.code_version()
    item["rates"] = {g: _rate(p) for g, p in summary.get("groups", {}).items()}
    item["complete"] = summary.get("groups", {}).get("draws 1-4", [0, 0])[1] == 160
    item["gates"] = gates(summary)
    return item


def validation_setting(dirs: list[Path]) -> dict:
    """The setting-level figures (`benchmark_data.pages.policy_settings.summarize_policy`) of the recipe
    policies in `dirs` as one K-experience setting on the validation scenes, seed 0 only."""
    import numpy as np

    from benchmark_data.pages.policy_settings import summarize_policy

    runs = []
    for d in dirs:
        meta = json.loads((d / "recipe.summary.json").read_text())
        rows = [json.loads(line) for line in (d / "recipe.episodes.jsonl").read_text().splitlines()]
        runs.append((meta, {r["scene_id"]: r["success"] for r in rows if r["group"] != "own"}))
    mechanisms = {m["mechanism"] for m, _ in runs}
    if len(mechanisms) != 1:
        raise SystemExit(f"a setting has one mechanism; these trials have {sorted(mechanisms)}")
    scenes = sorted(set.intersection(*(set(e) for _, e in runs)))
    outcomes = np.array([[[int(e[s])] for s in scenes] for _, e in runs], dtype=np.int8)
    summary = summarize_policy(outcomes)
    return {"experiences": [m["experience_id"] for m, _ in runs], "mechanism": mechanisms.pop(),
            "scenes": len(scenes), "seeds": [0], "random": round(summary.random, 3),
            "oracle": round(summary.oracle, 3), "best_fixed_success": round(summary.best_fixed_success, 3),
            "headroom": round(summary.headroom, 3), "paper_bar": summary.paper_bar,
            "go_no_go_random_at_least_0.2": summary.random >= 0.2}


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    setting = args[0] == "--setting" if args else False
    dirs = [Path(p) for p in (args[1:] if setting else args)]
    if not dirs:
        sys.stderr.write("usage: policy_recipe_summary.py [--setting] WORKDIR [WORKDIR ...]\n")
        return 2
    if setting:
        data = json.loads(OUT.read_text()) if OUT.exists() else {"trials": []}
        figures = validation_setting(dirs)
        data["settings"] = [s for s in data.get("settings", []) if s["experiences"] != figures["experiences"]
                            or s["mechanism"] != figures["mechanism"]] + [figures]
        OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(json.dumps(figures))
        return 0
    trials = json.loads(OUT.read_text())["trials"] if OUT.exists() else []
    for d in dirs:
        for name in ("recipe.summary.json", "frozen.summary.json"):
            if (d / name).exists():
                new = entry(d / name)
                key = lambda t: (t["policy"], t["experience_id"], t["mechanism"], t.get("command"))  # noqa: E731
                trials = [t for t in trials if key(t) != key(new)] + [new]
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    data.update({"about": "recipe trials on the validation query sets (docs/policy_protocol.md); "
                          "groups are [successes, episodes]", "trials": trials})
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(trials)} trials)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
