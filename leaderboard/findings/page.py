"""The findings page (`docs/findings.md`): the four results beside the paper's figures.

Pure text from a `Findings` object: tables, one plain sentence per result
saying whether this benchmark agrees with the paper, the figures as inline
SVG, and what could not be measured (missing settings, rules not computed).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from leaderboard.findings.figures import gap_vs_share, k_panel, own_base_vs_cross
from leaderboard.findings.measure import AUDITED_RULES, Findings, RuleCase, larger_on_appearance
from leaderboard.findings.paper import HEADLINE as PAPER
from leaderboard.findings.paper import R2_SCENE_RANGES, TABLE_IV
from leaderboard.metrics.defaults import ADVANTAGE_MIN_DENOMINATOR

K_PANEL_SETTINGS = {3: "stack-replay-k3-orig", 10: "stack-replay-k10-a", 50: "stack-replay-k50"}
"""The nested Stack Replay libraries of the paper's Fig. 3."""


def _f(value, digits: int = 2, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    rows = list(rows)
    if not rows:
        return ["_(no rows)_", ""]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out + [""]


def compare_range(ours: tuple[float, float] | None, paper: tuple[float, float]) -> str:
    """How our range sits against the paper's: inside, overlapping, or outside (plain words)."""
    if ours is None:
        return "cannot be compared: no setting here has the numbers"
    lo, hi = ours
    if paper[0] <= lo and hi <= paper[1]:
        return "inside the paper's range (agrees)"
    if hi < paper[0] or lo > paper[1]:
        side = "below" if hi < paper[0] else "above"
        return f"entirely {side} the paper's range (disagrees)"
    return "overlaps the paper's range but extends beyond it (partly disagrees)"


def _range(values: list[float]) -> tuple[float, float] | None:
    values = [v for v in values if v is not None]
    return (min(values), max(values)) if values else None


def _fmt_range(r: tuple[float, float] | None, digits: int = 2) -> str:
    if r is None:
        return "n/a"
    if f"{r[0]:.{digits}f}" == f"{r[1]:.{digits}f}":
        return f"{r[0]:.{digits}f}"
    return f"{r[0]:.{digits}f}-{r[1]:.{digits}f}"


def share_words(ours: int, n: int, paper: int, paper_n: int) -> str:
    """Whether our count points the same way as the paper's (a majority either way)."""
    if n == 0:
        return "cannot be compared: no case here"
    same = (ours / n > 0.5) == (paper / paper_n > 0.5)
    return (f"{ours} of {n} ({ours / n:.0%}) against the paper's {paper} of {paper_n} "
            f"({paper / paper_n:.0%}): " + ("same direction (agrees)" if same else "opposite direction (disagrees)"))


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None when undefined."""
    if len(x) < 3:
        return None
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


# ---------------------------------------------------------------- sections


def _coverage(f: Findings) -> list[str]:
    out = ["## What was measured", ""]
    settings = {row.setting.setting_id: row.setting for row in f.library}
    out += _table(["setting", "mechanism", "K", "query set"],
                  ([s.setting_id, s.mechanism, str(s.k), s.query_set] for s in settings.values()))
    if f.missing_settings:
        out += ["Settings **not measured** (no complete transfer matrix):", ""]
        out += _table(["setting", "mechanism", "K", "why"],
                      ([s.setting_id, s.mechanism, str(s.k), reason] for s, reason in f.missing_settings))
    reasons: dict[tuple[str, str], list[str]] = {}
    for stored in f.not_computed:
        reasons.setdefault((stored.rule, stored.reason or ""), []).append(stored.setting.setting_id)
    if reasons:
        out += ["Rules **not computed** (their rows say the same):", ""]
        out += _table(["rule", "settings", "why"],
                      ([rule, str(len(ids)), reason] for (rule, reason), ids in reasons.items()))
    return out


def _result1(f: Findings) -> list[str]:
    out = ["## 1. Best-fixed takes much of the random-to-oracle gap; little headroom is left", ""]
    rows = []
    for row in f.library:
        p = row.paper
        rows.append([row.setting.setting_id, str(row.setting.k),
                     f"{_f(row.best_fixed_advantage)} ({_f(p.best_fixed_advantage) if p else '-'})",
                     f"{_f(row.success_oracle)} ({_f(p.oracle) if p else '-'})",
                     f"{_f(row.success_random)} ({_f(p.random) if p else '-'})",
                     f"{_f(row.headroom, 3)} ({_f(p.headroom, 3) if p else '-'})",
                     f"{_f(row.oracle_top_pick_share)} ({_f(p.oracle_top_pick_share) if p else '-'})",
                     _f(row.track_record_advantage, signed=True)])
    out += ["Each cell: this benchmark (paper Table I in brackets; `-` where the paper has no such "
            f"setting). A is null when oracle minus random is below {ADVANTAGE_MIN_DENOMINATOR:g}.", ""]
    out += _table(["setting", "K", "best-fixed A", "oracle", "random", "headroom",
                   "oracle top-pick share", "track record A"], rows)
    bf = _range([r.best_fixed_advantage for r in f.library])
    head = _range([r.headroom for r in f.library])
    paper_bf, paper_head = PAPER["best_fixed_advantage"], PAPER["headroom"]
    n = len(f.library)
    in_bf = sum(r.best_fixed_advantage is not None and paper_bf[0] <= r.best_fixed_advantage <= paper_bf[1]
                for r in f.library)
    in_head = sum(paper_head[0] <= r.headroom <= paper_head[1] for r in f.library)
    out += [f"- Paper: best-fixed A {_fmt_range(paper_bf)}, headroom {_fmt_range(paper_head)} "
            "in every stable setting.",
            f"- Here: best-fixed A {_fmt_range(bf)} ({compare_range(bf, paper_bf)}; {in_bf} of {n} "
            f"settings inside); headroom {_fmt_range(head, 3)} ({compare_range(head, paper_head)}; "
            f"{in_head} of {n} inside).", ""]
    return out


def _result2(f: Findings) -> list[str]:
    c = f.concentration
    out = ["## 2. At K >= 10 the rules concentrate beyond the oracle, and A follows the top pick", ""]
    out += ["Every audited rule (embedding and structural) on every measured setting; the "
            "concentration summary below reads the K >= 10 rows.", ""]
    out += _table(["setting", "K", "rule", "top-pick share", "oracle's", "ratio", "A", "top-pick margin",
                   "signs match"],
                  ([x.setting.setting_id, str(x.setting.k), x.rule, _f(x.top_pick_share), _f(x.oracle_top_pick_share),
                    _f(x.concentration_ratio), _f(x.advantage, signed=True),
                    _f(x.top_pick_margin, 3, signed=True),
                    "n/a" if x.sign_match is None else ("yes" if x.sign_match else "no")]
                   for x in f.audited_cases))
    low, high = PAPER["concentration_ratio"]
    paper_m, paper_n = PAPER["sign_match"]
    ratio_text = compare_range(c.ratio_range, (low, high))
    out += [f"- Paper: visual rules are {low:g}-{high:g} times as concentrated as the oracle at K >= 10; "
            f"the sign of A matches the top pick's margin in {paper_m} of {paper_n} cases "
            f"({paper_m / paper_n:.0%}).",
            f"- Here ({len(c.large_k_cases)} visual-rule cases at K >= 10): ratio {_fmt_range(c.ratio_range)} "
            f"({ratio_text}); {c.n_above_spread} of {len(c.large_k_cases)} above {low:g}, "
            f"{c.n_in_paper_range} inside {low:g}-{high:g}.",
            "- Sign match here (visual and structural rules, cases with A defined): "
            + share_words(c.sign_match, c.sign_cases, paper_m, paper_n) + ".", ""]
    return out


def _discrimination(f: Findings) -> list[str]:
    """Which settings discriminate: the noise-aware label beside the paper's bar."""
    if not f.discrimination:
        return []
    out = ["## Which settings discriminate", "",
           "The label is the noise-aware rule (`docs/policy_protocol.md`, \"Amendment\"; "
           "`docs/metrics.md`): random success within 0.30-0.85 and the 95% interval of "
           "headroom_cf, the cross-fitted oracle minus random, above 0. At K = 3 and 5 seeds, "
           "execution noise alone brings oracle - random near 0.10, so the paper's bar "
           "(oracle - random >= 0.10) is shown beside it for comparison only. Results 1-4 below "
           "use every measured setting; where a case comes from a setting that does not "
           "discriminate, the tables say so.", ""]

    def label(row) -> str:
        if row.discriminates is None:
            return "n/a (report made before the rule)"
        return "yes" if row.discriminates else f"no: {row.reason}"

    def interval(row) -> str:
        if row.noise is None or row.headroom_cf_interval is None or row.headroom_cf_interval[0] is None:
            return "n/a"
        low, high = row.headroom_cf_interval
        return f"{_f(row.noise['headroom_cf'], 3)} [{_f(low, 3)}, {_f(high, 3)}]"

    out += _table(["setting", "random", "oracle - random", "headroom_cf [95% interval]",
                   "noise null: 95th percentile, p", "discriminates", "paper's bar"],
                  ([r.setting.setting_id, _f(r.random, 3), _f(r.oracle_minus_random, 3), interval(r),
                    "n/a" if r.noise is None
                    else f"{_f(r.noise['null_p95'], 3)}, p = {r.noise['null_p_value']:.4f}",
                    label(r), "met" if r.paper_discriminates else f"missed: {r.paper_reason}"]
                   for r in f.discrimination))
    changed = [r.setting.setting_id for r in f.discrimination
               if r.discriminates is not None and r.discriminates != r.paper_discriminates]
    now = sum(r.discriminates is True for r in f.discrimination)
    before = sum(r.paper_discriminates for r in f.discrimination)
    out += [f"- {now} of {len(f.discrimination)} settings discriminate by the rule; {before} met "
            f"the paper's bar. The label changes for: {', '.join(changed) or 'none'}.", ""]
    return out


def _gap_points(cases: Iterable[RuleCase]) -> list[dict]:
    return [{"share": x.top_pick_share, "gap": x.gap, "low": x.gap_envelope[0], "high": x.gap_envelope[1],
             "significant": x.gap_direction is not None, "label": f"{x.setting.setting_id} {x.rule}"}
            for x in cases if x.gap is not None and x.gap_envelope is not None]


def _result3(f: Findings) -> list[str]:
    g = f.gaps
    out = ["## 3. Significant gaps: by mechanism and sign", ""]
    mech_rows = [[m, str(v["above"]), str(v["below"])] for m, v in sorted(g.by_mechanism.items())]
    out += _table(["mechanism", "above the envelope", "below the envelope"], mech_rows)
    out += _table(["setting", "rule", "gap", "envelope", "appearance gap", "layout gap",
                   "larger on appearance", "setting discriminates"],
                  ([x.setting.setting_id, x.rule, _f(x.gap, 3, True),
                    f"[{_f(x.gap_envelope[0], 3, True)}, {_f(x.gap_envelope[1], 3, True)}]",
                    _f(x.appearance_gap, 3, True), _f(x.layout_gap, 3, True),
                    {True: "yes", False: "no", None: "n/a"}[larger_on_appearance(x)],
                    {True: "yes", False: "no", None: "n/a"}[x.setting_discriminates]]
                   for x in g.significant))
    outside = [x for x in g.significant if x.setting_discriminates is False]
    replay = g.by_mechanism.get("replay", {"above": 0, "below": 0})
    replay_split = [larger_on_appearance(x) for x in g.significant if x.setting.mechanism == "replay"]
    paper_replay = PAPER["replay_significant"]
    replay_n = replay["above"] + replay["below"]
    _, policy_n = PAPER["policy_significant_negative"]
    larger, larger_n = PAPER["appearance_larger"]
    inside, inside_n = PAPER["inside_envelope"]
    out += [f"- Paper: {paper_replay['above']} positive and {paper_replay['below']} negative significant "
            f"Replay cases; all {policy_n} Policy / Policy+DR cases negative; the negative gap larger on the "
            f"appearance subset in {larger} of {larger_n}; {inside} of {inside_n} cases inside the envelope.",
            "- Here, inside the envelope: "
            + share_words(g.inside_envelope, g.cases_with_gap, inside, inside_n) + ".",
            "- Here, positive among the significant Replay cases: "
            + share_words(replay["above"], replay_n, paper_replay["above"],
                          paper_replay["above"] + paper_replay["below"]) + ".",
            *_policy_gap_lines(f),
            f"- Larger on the appearance subset among the significant Replay cases: "
            f"{sum(s is True for s in replay_split)} of {sum(s is not None for s in replay_split)}. "
            f"Not comparable with the paper's {larger} of {larger_n}, which counts negative image-policy gaps: Replay never "
            "reads the camera, so on Replay the appearance subset differs from the layout subset only in "
            "which physical states it holds (level 0 against levels 1-3).",
            f"- From settings that do not discriminate (the noise-aware rule): {len(outside)} of "
            f"{len(g.significant)} significant cases"
            + (": " + ", ".join(f"{x.setting.setting_id} {x.rule} ({_f(x.gap, 3, True)})" for x in outside)
               if outside else "") + ".", ""]
    out += ["Figure 1 (paper Fig. 1): gap against top-pick share; bars are the 95% envelope of "
            "the frequency-matched shuffles, red points lie outside it.", "",
            gap_vs_share(_gap_points(f.visual_cases)), ""]
    return out


def _policy_gap_lines(f: Findings) -> list[str]:
    """The paper's image-policy result (every significant gap below the envelope) on the audited policy settings."""
    audited = sorted({x.setting.setting_id for x in f.visual_cases if x.setting.mechanism != "replay"})
    paper_below, paper_n = PAPER["policy_significant_negative"]
    paper_larger, paper_larger_n = PAPER["appearance_larger"]
    if not audited:
        return ["- No image-policy matrix is complete yet (docs/policy_settings.md), so the paper's "
                f"one-directional policy result (all {paper_n} negative) is **not tested** here."]
    significant = [x for x in f.gaps.significant if x.setting.mechanism != "replay"]
    below = [x for x in significant if x.gap_direction == "below"]
    split = [larger_on_appearance(x) for x in below]
    return [_policy_versions_line(f),
            f"- Image-policy settings audited here: {', '.join(audited)}. Below the envelope among their "
            f"{len(significant)} significant cases: "
            + share_words(len(below), len(significant), paper_below, paper_n) + ".",
            "- Of those below the envelope, the negative gap larger on the appearance subset: "
            + share_words(sum(s is True for s in split), sum(s is not None for s in split),
                          paper_larger, paper_larger_n) + "."]


POLICY_MECHANISM_WORDS = {
    1: "version 1 (one agent-view camera, 80 demonstrations; most of them cannot rank: "
       "docs/policy_settings.md)",
    2: "version 2, trained by the recipe pre-registered in docs/policy_protocol.md (its gates and "
       "what happens when one fails were committed before any of their cells was audited)",
}
"""How the findings name each policy mechanism version."""


UNRECORDED_POLICIES = ("policies whose version the reports do not record (reports computed "
                       "before it was stored, or a setting whose policies differ in version)")
"""How the findings name the policies of a report without a single recorded version."""


def _policy_versions_line(f: Findings) -> str:
    """Which policies the audited policy settings ran with, citing the protocol."""
    versions: dict[str, set[str]] = {}
    for x in f.visual_cases:
        if x.setting.mechanism != "replay":
            key = POLICY_MECHANISM_WORDS.get(x.setting.policy_mechanism, UNRECORDED_POLICIES)
            versions.setdefault(key, set()).add(x.setting.setting_id)
    parts = [f"{words} for {len(ids)} setting{'s' if len(ids) != 1 else ''}"
             for words, ids in sorted(versions.items())]
    return "- The policies: " + "; ".join(parts) + "."


def _result4(f: Findings) -> list[str]:
    a = f.auroc
    out = ["## 4. Predicting transfer is not ranking candidates", ""]
    out += _table(["setting", "rule", "pooled AUROC", "within-query AUROC", "eligible scenes"],
                  ([x.setting.setting_id, x.rule, _f(x.pooled_auroc), _f(x.within_query_auroc),
                    _f(x.within_query_eligible_share)] for x in a.cases))
    out += ["Paper Table IV beside this benchmark (ranges over the visual rules):", ""]
    paper_rows = {row.group: (row.pooled, row.within_query) for row in TABLE_IV}
    out += _table(["group", "pooled: paper", "pooled: here", "within-query: paper", "within-query: here",
                   "cases here"],
                  ([name, _fmt_range(paper_rows[name][0]) if paper_rows[name][0] else "(no row)",
                    _fmt_range(pooled),
                    _fmt_range(paper_rows[name][1]) if paper_rows[name][1] else "(no row)",
                    _fmt_range(within), str(n)]
                   for name, pooled, within, n in a.groups))
    out += _table(["setting", "R2 scene"], ([r.setting.setting_id, _f(r.r2_scene)] for r in f.library))
    paper_lower, paper_n = PAPER["within_lower"]
    out += [f"- Paper: within-query AUROC below pooled in {paper_lower} of {paper_n} eligible cases; "
            f"at K = 50 pooled {_fmt_range(PAPER['pooled_k50'])}, within {_fmt_range(PAPER['within_k50'])} "
            f"(all but ResNet); R2 scene {_fmt_range(R2_SCENE_RANGES['replay_k3'])} (Replay K = 3), "
            f"{_fmt_range(R2_SCENE_RANGES['replay_k10_up'])} (Replay K >= 10).",
            "- Here, within below pooled: " + share_words(a.within_lower, len(a.cases), paper_lower, paper_n)
            + f"; at K = 50 pooled {_fmt_range(a.pooled_range_k50)}, within "
            f"{_fmt_range(a.within_range_k50)} ({compare_range(a.within_range_k50, PAPER['within_k50'])}).",
            _r2_line(f), ""]
    return out


def _r2_line(f: Findings) -> str:
    """R2 scene of the Replay settings against the paper's ranges (K = 3 and K >= 10)."""
    replay = [r for r in f.library if r.setting.mechanism == "replay"]
    small = _range([r.r2_scene for r in replay if r.setting.k == 3])
    large = _range([r.r2_scene for r in replay if r.setting.k >= 10])
    return (f"- R2 scene here: Replay K = 3 {_fmt_range(small)} "
            f"({compare_range(small, R2_SCENE_RANGES['replay_k3'])}); Replay K >= 10 {_fmt_range(large)} "
            f"({compare_range(large, R2_SCENE_RANGES['replay_k10_up'])}).")


def _k_panel_svg(f: Findings) -> str:
    rules = [r for r in AUDITED_RULES if any(c.rule == r for c in f.audited_cases)]
    ks = sorted(K_PANEL_SETTINGS)
    by = {(c.setting.setting_id, c.rule): c for c in f.audited_cases}
    share, gap, envelope, adv = {}, {}, {}, {}
    oracle_share, bf_adv = {}, {}
    rows = {r.setting.setting_id: r for r in f.library}
    for k, sid in K_PANEL_SETTINGS.items():
        if sid in rows:
            oracle_share[k] = rows[sid].oracle_top_pick_share
            bf_adv[k] = rows[sid].best_fixed_advantage
        for rule in rules:
            case = by.get((sid, rule))
            if case is None:
                continue
            share[(rule, k)] = case.top_pick_share
            if case.gap is not None:
                gap[(rule, k)] = case.gap
                envelope[(rule, k)] = case.gap_envelope
            if case.advantage is not None:
                adv[(rule, k)] = case.advantage
    return k_panel(rules, ks, share, oracle_share, gap, envelope, adv, bf_adv)


def _rho_words(rho: float | None) -> str:
    if rho is None:
        return "the correlation cannot be computed yet"
    if abs(rho) < 0.3:
        return "as in the paper, own-base success says little about transfer (agrees)"
    return ("unlike the paper, own-base success and cross-scene success are correlated here "
            "(disagrees)")


def _figures(f: Findings, cross: dict[str, float]) -> list[str]:
    out = ["## Figures", "",
           "Figure 3 (paper Fig. 3): Stack Replay at K = 3, 10, 50 (settings "
           + ", ".join(K_PANEL_SETTINGS.values()) + "); a K whose setting is not complete is empty.", "",
           _k_panel_svg(f), ""]
    own = {e: s for lib in f.own_base.values() for e, s in lib.items()}
    shared = [e for e in cross if e in own]
    rho = spearman([own[e] for e in shared], [cross[e] for e in shared])
    reliable_weak = sum(own[e] >= 0.8 and cross[e] <= 0.45 for e in shared)
    out += ["Figure 2 (paper Fig. 2): own-base success against mean cross-scene success "
            f"({len(shared)} experiences; paper: rho = -0.04 over 50, seven with own-base >= 0.8 and "
            f"cross-scene <= 0.45). Here: Spearman rho = {_f(rho, 2, True)}, {reliable_weak} "
            f"reliable at home and weak elsewhere (shaded); {_rho_words(rho)}.", "",
            own_base_vs_cross([own[e] for e in shared], [cross[e] for e in shared], shared), ""]
    return out


def render_findings(f: Findings, source: str) -> str:
    """The whole page, in Markdown with inline SVG; `source` names the report directory."""
    lines = ["# Findings: the paper's four results on this benchmark", "",
             f"Generated by `scripts/make_findings.py` from the audit reports in `{source}`; do not "
             "edit by hand. Every number comes from the same audit as a submission "
             "(`docs/metrics.md`); the paper's figure is given beside each result. Where the two "
             "disagree, this page says so: the benchmark is not tuned toward the paper.", ""]
    lines += _coverage(f) + _discrimination(f) + _result1(f) + _result2(f) + _result3(f) + _result4(f)
    lines += _figures(f, f.cross_scene)
    return "\n".join(lines).rstrip() + "\n"
