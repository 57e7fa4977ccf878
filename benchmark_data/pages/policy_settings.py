"""Setting-level figures of the image-policy settings, over their complete seeds, and the docs table.

Policy tensors are filled seed by seed (every cell of seed 0, then seed 1, ...),
so a setting can be partly generated. The figures here use only the seeds whose
K x Q slice is fully executed; the pure functions take arrays and return frozen
dataclasses. `python -m benchmark_data.pages.policy_settings` writes
`docs/policy_settings.md` from the frozen data.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmark_data.frozen import load_transfer
from benchmark_data.pages.appearance_failures import (AppearanceFailureShare, NoiseFloorShare,
                                                      ShareDifference, appearance_failure_share,
                                                      appearance_share_difference, complete_seeds,
                                                      excess_over_noise_floor, noise_floor_share)
from benchmark_data.pages.doc_page import page_main
from benchmark_data.pages.labels import LABELS_HEAD, label_of, labels_table, rule_txt
from benchmark_data.pages.policies_table import policies_table
from benchmark_data.pages.setting_figures import summarize
from benchmark_data.policy_files import failed_gates, policy_dir, published_policy_settings
from benchmark_data.registry import Mechanism
from expaudit.errors import InvalidInput
from leaderboard.findings.paper import APPEARANCE_FAILURE_SHARE, TABLE_I
from leaderboard.matrix import MISSING
from leaderboard.metrics import defaults
from leaderboard.metrics.discrimination import (MIN_QUALITY_RANGE, discriminates, quality_range,
                                                quality_shortfall, shortfall)

__all__ = ["PolicySettingSummary", "success_by_group", "summarize_policy", "write_doc"]


@dataclass(frozen=True)
class PolicySettingSummary:
    """Reference quantities of one policy setting over its complete seeds.

    seeds_complete : the seeds whose K x Q slice is fully executed.
    n_seeds : seeds of the tensor (S).
    cells_done, cells_total : executed cells and K x Q x S.
    The remaining fields come from `summarize` on the seed-mean success matrix
    over `seeds_complete` (AUDIT_SPEC definitions); all None when no seed is
    complete. `paper_bar` applies the paper's bar to random and oracle (the label is the
    noise-aware rule: `benchmark_data.pages.labels`).
    quality_range : the best experience's mean success minus the worst's: the policies must
        differ in quality for a selector to have something to find.
    """

    seeds_complete: tuple[int, ...]
    n_seeds: int
    cells_done: int
    cells_total: int
    random: float | None
    oracle: float | None
    best_fixed: int | None
    best_fixed_success: float | None
    best_fixed_advantage: float | None
    headroom: float | None
    paper_bar: bool | None
    quality_range: float | None


def summarize_policy(outcomes: np.ndarray) -> PolicySettingSummary:
    """The setting-level figures of a policy outcome tensor (K x Q x S), from its complete seeds."""
    outcomes = np.asarray(outcomes)
    seeds = complete_seeds(outcomes)
    done, total = int((outcomes != MISSING).sum()), int(outcomes.size)
    if not seeds:
        return PolicySettingSummary(seeds_complete=(), n_seeds=outcomes.shape[2], cells_done=done,
                                    cells_total=total, random=None, oracle=None, best_fixed=None,
                                    best_fixed_success=None, best_fixed_advantage=None,
                                    headroom=None, paper_bar=None, quality_range=None)
    y = outcomes[:, :, list(seeds)].astype(np.float64).mean(axis=2)
    s = summarize(y)
    return PolicySettingSummary(seeds_complete=seeds, n_seeds=outcomes.shape[2], cells_done=done,
                                cells_total=total, random=s.random, oracle=s.oracle,
                                best_fixed=s.best_fixed, best_fixed_success=s.best_fixed_success,
                                best_fixed_advantage=s.best_fixed_advantage, headroom=s.headroom,
                                paper_bar=discriminates(s.random, s.oracle),
                                quality_range=quality_range(y))


def _fmt(value, digits=2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval_txt(interval, scale: float = 100.0, signed: bool = False) -> str:
    """" [low, high]" in points, the reason where there is no interval, and the resamples left out."""
    if interval is None:
        return ""
    if interval.low is None:
        return f" [no interval: {interval.reason}]"
    show = _signed if signed else "{:.0f}".format
    left_out = f", {interval.n_undefined} resamples undefined" if interval.n_undefined else ""
    return f" [{show(scale * interval.low)}, {show(scale * interval.high)}{left_out}]"


def _signed(value: float) -> str:
    """Whole points with their sign; "0" for what rounds to zero (never "-0")."""
    return "0" if round(value) == 0 else f"{value:+.0f}"


def _seeds_txt(seeds) -> str:
    """"1 seed", "5 seeds"."""
    return f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}"


def _pct(share: AppearanceFailureShare) -> str:
    """An appearance-caused share as a table cell: share [interval] (caused/failures, seeds)."""
    value = "n/a" if share.share is None else f"{100 * share.share:.0f}%"
    return (f"{value}{_interval_txt(share.interval)} ({share.appearance_caused}/{share.failures}, "
            f"{_seeds_txt(share.seeds)})")


def _floor_pct(floor: NoiseFloorShare, excess: ShareDifference) -> str:
    """A noise floor as a table cell: share [interval] (twin successes/failure pairs), and the
    share's paired excess over it."""
    if floor.share is None:
        return f"n/a ({floor.reason})"
    over = f"; excess n/a ({excess.reason})" if excess.difference is None else f"; excess {_points(excess)}"
    return (f"{100 * floor.share:.0f}%{_interval_txt(floor.interval)} "
            f"({floor.twin_successes}/{floor.failure_pairs}){over}")


def _points(diff: ShareDifference) -> str:
    """A paired difference as a table cell, in percentage points."""
    if diff.difference is None:
        return "n/a"
    return f"{_signed(100 * diff.difference)} points{_interval_txt(diff.interval, signed=True)}"


def _quality_txt(value: float) -> str:
    """The quality range, and "(below <bar>)" where it misses `MIN_QUALITY_RANGE`."""
    below = quality_shortfall(value) is not None
    return f"{value:.2f}" + (f" (below {MIN_QUALITY_RANGE:.2f})" if below else "")


def _paper_bar_txt(s: PolicySettingSummary) -> str:
    """"met", or "missed: " and what misses the paper's bar, measured."""
    return "met" if s.paper_bar else f"missed: {shortfall(s.random, s.oracle)}"


def settings_table(root=None) -> str:
    """The Markdown table of the policy settings' figures from the frozen data, with the gates
    their policies under the same root failed."""
    lines = ["| setting | K | seeds complete | cells | random | oracle | best-fixed | best-fixed success "
             "| best-fixed A | headroom | quality range | discriminates | paper's bar "
             "| failed policy gates | paper: random, oracle, A, headroom |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for setting in published_policy_settings():
        data = load_transfer(setting.id, root)
        s = summarize_policy(data.outcomes)
        paper = TABLE_I.get(setting.id)
        paper_txt = ("not given" if paper is None
                     else f"{paper.random:.2f}, {paper.oracle:.2f}, {paper.best_fixed_advantage:.2f}, "
                          f"{paper.headroom:.3f}")
        gates_txt = "; ".join(failed_gates(setting, root)) or "none"
        head = (f"| {setting.id} | {setting.k} | {len(s.seeds_complete)} of {s.n_seeds} "
                f"| {s.cells_done}/{s.cells_total} ")
        if not s.seeds_complete:
            lines.append(head + f"| no complete seed yet | | | | | | | | | {gates_txt} | {paper_txt} |")
            continue
        lines.append(head + f"| {s.random:.2f} | {s.oracle:.2f} "
                     f"| {data.experience_ids[s.best_fixed]} | {s.best_fixed_success:.2f} "
                     f"| {_fmt(s.best_fixed_advantage)} | {s.headroom:.3f} | {_quality_txt(s.quality_range)} "
                     f"| {rule_txt(label_of(data))} | {_paper_bar_txt(s)} | {gates_txt} | {paper_txt} |")
    return "\n".join(lines)


def appearance_table(root=None) -> str:
    """Markdown: appearance-caused failure share of Policy and Policy+DR, each beside its
    execution-noise floor, and their paired difference, per task and query set, with
    state-clustered 95% intervals. Where the two settings share complete seeds, every figure
    of the row uses those; otherwise each setting its own complete seeds (and no difference)."""
    pairs: dict[tuple[str, str], dict] = {}
    for setting in published_policy_settings():
        pairs.setdefault((setting.task, setting.query_set), {})[setting.mechanism] = setting
    lines = ["| task | query set | Policy | its noise floor; excess | Policy+DR | its noise floor; excess "
             "| Policy - Policy+DR | paper (Policy -> Policy+DR) |",
             "|---|---|---|---|---|---|---|---|"]
    for (task, query_set), by_mech in pairs.items():
        data = {m: load_transfer(s.id, root) for m, s in by_mech.items()}
        seeds = {m: set(complete_seeds(d.outcomes)) for m, d in data.items()}
        both = tuple(sorted(set.intersection(*seeds.values()))) if seeds else ()
        if len(data) == 2:
            first, second = data[Mechanism.POLICY], data[Mechanism.POLICY_DR]
            if list(first.scenes.scene_ids) != list(second.scenes.scene_ids):
                raise InvalidInput(f"{task} {query_set}: Policy and Policy+DR list their scenes in "
                                   "different orders")
        cells = []
        for mech in (Mechanism.POLICY, Mechanism.POLICY_DR):
            d = data.get(mech)
            used = both or tuple(sorted(seeds.get(mech, ())))
            if d is None:
                cells += ["n/a", "n/a"]
            elif not used:
                cells += ["no complete seed yet", "n/a"]
            else:
                scenes = (d.outcomes, d.scenes.state_ids, d.scenes.appearance_draw, used)
                cells += [_pct(appearance_failure_share(*scenes)),
                          _floor_pct(noise_floor_share(*scenes), excess_over_noise_floor(*scenes))]
        difference = "n/a"
        if len(data) == 2 and both:
            difference = _points(appearance_share_difference(
                first.outcomes, second.outcomes, first.scenes.state_ids,
                first.scenes.appearance_draw, both))
        paper = APPEARANCE_FAILURE_SHARE.get(task)
        paper_txt = ("not given (the paper reports that randomization also degrades layout performance)"
                     if paper is None else f"{100 * paper[0]:.0f}% -> {100 * paper[1]:.0f}%")
        lines.append(f"| {task} | {query_set} | " + " | ".join(cells) + f" | {difference} | {paper_txt} |")
    return "\n".join(lines)


def success_by_group(outcomes: np.ndarray, groups, seeds) -> dict[int, float]:
    """Mean success over experiences, the given seeds and the scenes of each group value.

    `groups` labels each scene (e.g. its layout level or appearance draw);
    returns {group value: mean success}, empty when no seed is given.
    """
    outcomes = np.asarray(outcomes)
    groups = np.asarray(groups)
    if outcomes.ndim != 3 or groups.shape != (outcomes.shape[1],):
        raise InvalidInput(f"groups must label the {outcomes.shape[1] if outcomes.ndim == 3 else '?'} "
                           f"scenes of outcomes (K, Q, S), got shape {groups.shape}")
    if not seeds:
        return {}
    y = outcomes[:, :, list(seeds)].astype(np.float64)
    if (y < 0).any():
        raise InvalidInput("seeds: a given seed has MISSING cells")
    return {int(g): float(y[:, groups == g, :].mean()) for g in np.unique(groups)}


def breakdown_table(root=None) -> str:
    """Markdown: success by layout level and nominal vs perturbed appearance, per setting."""
    lines = ["| setting | level 0 | level 1 | level 2 | level 3 | draw 0 | draws 1-4 |",
             "|---|---|---|---|---|---|---|"]
    for setting in published_policy_settings():
        data = load_transfer(setting.id, root)
        seeds = complete_seeds(data.outcomes)
        if not seeds:
            lines.append(f"| {setting.id} | no complete seed yet | | | | | |")
            continue
        level = success_by_group(data.outcomes, data.scenes.layout_level, seeds)
        perturbed = (np.asarray(data.scenes.appearance_draw) > 0).astype(int)
        draw = success_by_group(data.outcomes, perturbed, seeds)
        lines.append(f"| {setting.id} | " + " | ".join(_fmt(level.get(v)) for v in range(4))
                     + f" | {_fmt(draw.get(0))} | {_fmt(draw.get(1))} |")
    return "\n".join(lines) + door_layout_text(root)


def door_layout_text(root=None) -> str:
    """The paper's Door statement that domain randomization degrades layout performance, set
    beside Door Policy+DR minus Policy success at each layout level (over complete seeds)."""
    diffs = []
    for query_set in ("door-orig", "door-fresh"):
        pair = {}
        for setting in published_policy_settings():
            if setting.task == "door" and setting.query_set == query_set:
                data = load_transfer(setting.id, root)
                seeds = complete_seeds(data.outcomes)
                pair[setting.mechanism.value] = (
                    success_by_group(data.outcomes, data.scenes.layout_level, seeds) if seeds else {})
        policy, randomized = pair.get("policy") or {}, pair.get("policy_dr") or {}
        levels = sorted(set(policy) & set(randomized))
        if levels:
            diffs.append((query_set, {v: randomized[v] - policy[v] for v in levels}))
    if not diffs:
        return ""
    every = [d for _, by_level in diffs for d in by_level.values()]
    verdict = ("does not reproduce here: Door Policy+DR succeeds more often than Door Policy at "
               "every layout level" if min(every) > 0 else
               "reproduces here at some layout levels" if min(every) < 0 else "is neither shown nor "
               "contradicted here")
    parts = "; ".join(f"{qs}: " + ", ".join(f"level {v} {d:+.2f}" for v, d in by_level.items())
                      for qs, by_level in diffs)
    return (f"\n\nThe paper's other Door statement, that domain randomization degrades performance "
            f"on layout changes, {verdict} (Policy+DR minus Policy success, {parts}).")


def door_demos_text(root=None) -> str:
    """The Door policies and the ajar-door correction of data version 0.2.0 (issue 38): their
    level-2 demonstrations had the same flaw, the policies stay as they are, and each one's
    gates on door-val version 1 (recorded) beside version 2 (`gates_v2` in its training.json)."""
    rows = []
    for mechanism in ("policy", "policy_dr"):
        for experience_id in ("door-e000", "door-e001", "door-e002"):
            path = policy_dir(mechanism, experience_id, root) / "training.json"
            record = json.loads(path.read_text()) if path.exists() else {}
            if "gates_v2" not in record:
                continue
            old, new = record["validation"]["groups"], record["gates_v2"]["groups"]
            verdict = {True: "all pass", False: "fail: "}
            rows.append(f"| {experience_id} {'Policy+DR' if mechanism == 'policy_dr' else 'Policy'} | "
                        + " | ".join(f"{old[g][0]}/{old[g][1]} -> {new[g][0]}/{new[g][1]}"
                                     for g in ("draw 0", "draws 1-4"))
                        + " | " + " -> ".join(
                            verdict[r["gates_passed"]] + ", ".join(n for n, g in r["gates"].items()
                                                                   if not g["passed"])
                            for r in (record, record["gates_v2"]))
                        + _rerun_note(record["gates_v2"]) + " |")
    table = ("\n\n| policy | door-val draw 0, v1 -> v2 | draws 1-4, v1 -> v2 | gates, v1 -> v2 |\n"
             "|---|---|---|---|\n" + "\n".join(rows)) if rows else ""
    return DOOR_DEMOS_HEAD + table


def _rerun_note(entry: dict) -> str:
    """Where the version-1 level-2 re-run did not give the recorded successes, both counts."""
    if entry.get("rerun_reproduces", True):
        return ""
    rerun, recorded = entry["level_2_version_1_rerun"], entry["level_2_version_1_recorded"]
    return (f" (level 2 on version 1 re-run: {rerun[0]}/{rerun[1]}, recorded "
            f"{recorded[0]}/{recorded[1]})")


DOOR_DEMOS_HEAD = """

### The Door policies and the ajar door (data version 0.2.0)

Data version 0.2.0 made the ajar (layout level 2) states of door-orig and
door-fresh physically valid: in version 1 they started with the latch inside
the door frame, so the door was kicked open or slammed shut by itself
(`docs/changelog.md`; door-val has the same correction as its version 2). The
recipe's level-2 demonstrations were drawn by the same generator and had the
same flaw. The frozen Door policies stay as they are, neither retrained nor
retuned: they are the policies every Door cell was run with, before and
after the correction. Their gates stay those recorded on door-val version 1;
each policy's `training.json` also holds `gates_v2`, the same gates with the
changed door-val states (s20-s28) run again on version 2 with the gates' seed
(`scripts/door_revision.py gates`), shown here as successes / episodes. The
re-run also runs version 1's level-2 episodes, whose successes must give the
recorded ones; a policy episode reproduces only up to the renderer's rounding
on another machine, and where one flipped the row gives both counts."""


DOC_HEAD = """# Image-policy settings: figures over the complete seeds

Generated by `python -m benchmark_data.pages.policy_settings` from the frozen data
(`benchmark_data/frozen/`); do not edit by hand.

The eight image-policy settings reuse each of the K=3 experiences of a task
through a behaviour-cloned image policy (robomimic BC-RNN) trained on
demonstrations in that experience's own expert style: **Policy** is trained on
demonstrations rendered with the nominal appearance, **Policy+DR** on
demonstrations with randomized appearance (lighting, colours, textures,
camera). How each policy was made, and the gates it met, is under "The
policies" below. Each query set has 40 physical states x 5
appearance draws (draw 0 nominal, draws 1-4 perturbed appearance of the same
state). The policies read the camera, so every render is executed: a setting
has K x 200 scenes x 5 seeds cells, each its own rollout.

Cells are generated seed by seed (every cell of seed 0, then seed 1, ...). A
seed is **complete** when all K x 200 of its cells are executed; every number
below comes from the complete seeds only (the success matrix is the mean over
those seeds), and a setting with no complete seed shows "no complete seed yet".
**cells** counts all executed cells, including those of incomplete seeds.

Definitions (AUDIT_SPEC, as in `docs/replay_settings.md`): **random**: mean
success over all experiences and scenes; **oracle**: mean over scenes of the
best experience's success; **best-fixed**: the experience with the highest
mean success, and that success; **best-fixed A**: (best-fixed - random) /
(oracle - random), n/a when oracle - random is below 0.05; **headroom**:
oracle - best-fixed; **quality range**: the best experience's mean success
minus the worst's (the policies must differ in quality for a selector to have
something to find; the regenerated settings are asked for at least 0.10,
and a range below it says so). **discriminates**: the noise-aware rule of
`docs/policy_protocol.md` ("Amendment"), the same as the Replay settings'
and the leaderboard's label (`leaderboard.metrics.discrimination`): random
within 0.30-0.85 and the 95% interval of headroom_cf above 0; where it is
"no", what misses it, measured (the section below gives its numbers).
**paper's bar**: oracle - random >= 0.10 and random within 0.30-0.85, shown
for comparison, not the label. **failed policy gates**: each gate of
`docs/policy_protocol.md` a policy of the setting failed, from its
`training.json`, with the measured value, its n and the bar (the leaderboard
shows them beside its label); "none" also where the policies were made before
the gates and record none.

"""

APPEARANCE_HEAD = f"""

## Failures caused by appearance

Over the seeds complete in both settings of a row (or, where they share
none, each setting's own complete seeds) and all K experiences: among the failures
in scenes with appearance draw 1-4, the share whose draw-0 twin (same
experience, same physical state, same seed, nominal appearance) succeeded.
Shown as share [95% interval] (appearance-caused / failures on draws 1-4,
seeds counted); n/a when there is no such failure.

A policy is stochastic, so a failure's twin can also succeed by execution
noise alone. **Its noise floor** is that share on the nominal draw: of every
draw-0 failure paired with each other seed of the same experience and scene,
the share whose twin succeeded (twin successes / pairs; it needs two seeds).
Were appearance to change nothing, a failure on draws 1-4 would be one more
execution of its state and the share would sit at the floor; what it
exceeds the floor by is appearance's doing, shown as **excess** in points
with its own paired interval (one resample of states for share and floor).

The intervals resample the physical states of the query set with replacement
({defaults.N_BOOTSTRAP:,} resamples, generator seed {defaults.SEED}; all five
renders, every experience and seed of a state together), as the audit's
intervals do; resamples on which a share is undefined (no failure drawn) are
left out and counted. **Policy - Policy+DR** is the difference of the two
shares in percentage points, its interval paired: each resample draws one set
of states for both settings, which run the same scenes. The paper reports one
Stack figure, 26% for Policy and 2% for Policy+DR, shown beside both Stack
query sets. The paper gives no Door figure; it reports instead that on Door
domain randomization also degrades performance on layout changes.

"""

BREAKDOWN_HEAD = """

## Where the policies succeed

Mean success over the complete seeds and the K experiences, by layout level
(0 nominal, 1 both objects displaced together, 2 displaced independently or
a changed articulation, 3 an obstacle) and by appearance (draw 0 nominal,
draws 1-4 perturbed).

"""

POLICIES_HEAD = """

## The policies

One row per policy the settings above use, from its `spec.json` and
`training.json` under the same data root. Every one is **policy version 2**
(mechanism 2), the recipe of `docs/policy_protocol.md`, chosen on the validation query sets
**stack-val** and **door-val** only (new seeds, the frozen sets' generator,
levels and draws; disjoint from every frozen query set and every
demonstration, checked): an eye-in-hand camera beside the agent view, 240
demonstrations over layout levels 0-2, 20,000 cloning steps on cached
features of frozen encoders, and random crops of the agent view. Its own
layouts and validation episodes are execution-noise seed 0, and its gates
are those of the protocol (own layouts >= 0.8; Policy: draw 0 >= 0.5 and
draws 1-4 >= 0.2; Policy+DR: draws 1-4 within 0.1 of draw 0). A policy that
failed a gate is kept, not retuned, and its settings say so above.
**training min** is the wall time of its training (encoder pretraining,
cloning and the caching of features; recording the demonstrations not
counted) on the CPU machine that trained it, shared with
other work.
`benchmark_data/validation/recipe_trials.json` holds the recipe trials.

"""

DOC_TAIL = """

## Regenerating

```
expaudit data train-policies --out benchmark_data/staging
scripts/policy_gates.py benchmark_data/staging
expaudit data generate SETTING --seeds 0 1 2 3 4 --out benchmark_data/staging
expaudit data adopt-staging --check
expaudit data adopt-staging
python -m benchmark_data.pages.policy_settings
```

`train-policies` records the demonstrations, trains the policies with the
recipe (policy mechanism 2) and measures each one's gates on the validation
set (resumable, in `./policy-training`); `policy_gates.py` prints the gates
and the go / no-go of `docs/policy_protocol.md`, decided before any cell is
generated; `generate` runs the cells of one policy setting for the given
seeds, in order (resumable). Policies and cells are made in the staging root;
`adopt-staging --check` lists what it still lacks, and `adopt-staging`
replaces the published policies, cells and encoder features with them once
all twelve policies and all eight settings are complete (`docs/data.md`,
"Adopting the regenerated policy settings"); the last command rewrites this
page.
"""


def write_doc(path: Path, root=None) -> Path:
    path.write_text(DOC_HEAD + settings_table(root)
                    + LABELS_HEAD + labels_table([s.id for s in published_policy_settings()], root)
                    + APPEARANCE_HEAD + appearance_table(root)
                    + BREAKDOWN_HEAD + breakdown_table(root) + POLICIES_HEAD + policies_table(root)
                    + door_demos_text(root) + DOC_TAIL)
    return path


def main(argv=None) -> int:
    return page_main(write_doc, "docs/policy_settings.md", argv)


if __name__ == "__main__":
    sys.exit(main())
