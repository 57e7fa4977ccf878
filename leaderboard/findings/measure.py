"""The paper's four headline results, re-measured from stored audit reports.

Input is a `ReportStore` (`leaderboard.findings.store`: one stored audit
report per (setting, rule), the settings not measured and own-base
success). Everything here is a pure function of those report dicts;
`leaderboard.findings.page` draws the figures and writes the page.

The four results (paper: "Beyond End-Task Success"):
1. best-fixed's share of the random-to-oracle gap and the oracle's headroom;
2. the top pick's share against the oracle's at K >= 10, and whether the sign
   of A matches the sign of the top pick's quality margin;
3. the significant discrimination gaps by mechanism and sign, and whether
   they are larger on the appearance or the layout subset;
4. pooled against within-query AUROC.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.findings import paper
from leaderboard.findings.paper import TableIRow
from leaderboard.findings.store import ReportStore, SettingInfo, StoredReport
from leaderboard.metrics.discrimination import shortfall
from leaderboard.rules.registry import Family, rule_names

VISUAL_RULES = rule_names(Family.EMBEDDING)
"""Nearest-neighbour rules in an image embedding (the paper's "visual rules")."""
STRUCTURAL_RULES = rule_names(Family.STRUCTURAL)
AUDITED_RULES = VISUAL_RULES + STRUCTURAL_RULES
"""Rules that report A without outcome data: the paper's 7 (5 visual + 2 structural) cases per setting."""
OUTCOME_RULES = rule_names(Family.OUTCOME)

# ---------------------------------------------------------------- result 1: best-fixed


@dataclass(frozen=True)
class LibraryRow:
    """Table I of one setting: best-fixed, oracle, random, headroom, oracle top-pick share."""

    setting: SettingInfo
    best_fixed_advantage: float | None
    success_oracle: float
    success_random: float
    success_best_fixed: float
    headroom: float
    oracle_top_pick_share: float
    r2_scene: float | None
    track_record_advantage: float | None
    paper: TableIRow | None


def _any_report(store: ReportStore, setting_id: str) -> dict | None:
    for rule in ("oracle", "best_fixed") + AUDITED_RULES + OUTCOME_RULES:
        stored = store.get(setting_id, rule)
        if stored is not None and stored.computed:
            return stored.report
    return None


def library_rows(store: ReportStore) -> list[LibraryRow]:
    """One row per setting with at least one computed report (the library-level numbers)."""
    rows = []
    for setting in store.settings():
        report = _any_report(store, setting.setting_id)
        if report is None:
            continue
        ref, conc = report["reference"], report["concentration"]
        track = store.get(setting.setting_id, "track_record")
        rows.append(LibraryRow(
            setting=setting, best_fixed_advantage=ref["best_fixed_advantage"],
            success_oracle=ref["success_oracle"], success_random=ref["success_random"],
            success_best_fixed=ref["success_best_fixed"], headroom=ref["headroom"],
            oracle_top_pick_share=conc["oracle_top_pick_share"],
            r2_scene=report["ranking"]["r2_scene"],
            track_record_advantage=(track.report["reference"]["advantage"]
                                    if track is not None and track.computed else None),
            paper=paper.TABLE_I.get(setting.setting_id)))
    return rows


# ---------------------------------------------------------------- result 2: concentration


@dataclass(frozen=True)
class RuleCase:
    """One audited (setting, rule) with the numbers results 2-4 read."""

    setting: SettingInfo
    rule: str
    advantage: float | None
    top_pick_share: float
    oracle_top_pick_share: float
    concentration_ratio: float
    top_pick_margin: float
    sign_match: bool | None
    gap: float | None
    gap_envelope: tuple[float, float] | None
    gap_direction: str | None
    appearance_gap: float | None
    layout_gap: float | None
    pooled_auroc: float | None
    within_query_auroc: float | None
    within_query_eligible_share: float | None
    setting_discriminates: bool | None = None
    """The setting's label by the noise-aware rule (the report's `noise` block); None in a
    report made before the rule."""


def rule_cases(store: ReportStore, rules: tuple[str, ...] = AUDITED_RULES) -> list[RuleCase]:
    """The computed reports of `rules`, in publication order of the settings, then rule order."""
    cases = []
    for stored in store.reports:
        if stored.rule not in rules or not stored.computed:
            continue
        r = stored.report
        gap, conc, rank = r["gap"], r["concentration"], r["ranking"]
        envelope = gap["all"]["gap_envelope"]
        cases.append(RuleCase(
            setting=stored.setting, rule=stored.rule, advantage=r["reference"]["advantage"],
            top_pick_share=conc["top_pick_share"], oracle_top_pick_share=conc["oracle_top_pick_share"],
            concentration_ratio=conc["concentration_ratio"], top_pick_margin=conc["top_pick_margin"],
            sign_match=conc["sign_match"], gap=gap["all"]["gap"],
            gap_envelope=None if envelope is None else (envelope[0], envelope[1]),
            gap_direction=gap["all"]["direction"],
            appearance_gap=gap.get("appearance", {}).get("gap"),
            layout_gap=gap.get("layout", {}).get("gap"),
            pooled_auroc=rank["pooled_auroc"], within_query_auroc=rank["within_query_auroc"],
            within_query_eligible_share=rank["within_query_eligible_share"],
            setting_discriminates=(r.get("noise") or {}).get("discriminates")))
    return sorted(cases, key=lambda c: (c.setting.order, c.setting.setting_id, rules.index(c.rule)))


@dataclass(frozen=True)
class ConcentrationFinding:
    """Result 2: concentration of the visual rules at K >= 10, and the sign match."""

    large_k_cases: tuple[RuleCase, ...]
    ratio_range: tuple[float, float] | None
    n_above_spread: int
    n_in_paper_range: int
    sign_match: int
    sign_cases: int


def concentration_finding(cases: list[RuleCase], min_k: int = 10) -> ConcentrationFinding:
    """Concentration ratios of the visual rules at K >= `min_k`; sign match over every audited case.

    As in the paper, the concentration claim is about the visual rules and
    the sign match counts the visual and structural rules together.
    """
    large = tuple(c for c in cases if c.setting.k >= min_k and c.rule in VISUAL_RULES)
    ratios = [c.concentration_ratio for c in large]
    low, high = paper.HEADLINE["concentration_ratio"]
    signed = [c for c in cases if c.sign_match is not None]
    return ConcentrationFinding(
        large_k_cases=large,
        ratio_range=(min(ratios), max(ratios)) if ratios else None,
        n_above_spread=sum(r > low for r in ratios),
        n_in_paper_range=sum(low <= r <= high for r in ratios),
        sign_match=sum(bool(c.sign_match) for c in signed),
        sign_cases=len(signed))


# ---------------------------------------------------------------- which settings discriminate


@dataclass(frozen=True)
class DiscriminationRow:
    """A setting's label by the noise-aware rule and by the paper's bar, from its reports.

    `noise` is the report's noise block and `headroom_cf_interval` its interval; both None
    (and `discriminates` None) in a report made before the rule.
    """

    setting: SettingInfo
    random: float
    oracle_minus_random: float
    noise: dict | None
    headroom_cf_interval: tuple[float | None, float | None] | None
    discriminates: bool | None
    reason: str | None
    paper_discriminates: bool
    paper_reason: str | None


def discrimination_rows(store: ReportStore) -> list[DiscriminationRow]:
    """One row per measured setting, in publication order (the numbers are the data's, so any
    computed report of the setting gives them)."""
    rows = []
    for setting in store.settings():
        report = _any_report(store, setting.setting_id)
        if report is None:
            continue
        ref = report["reference"]
        random, oracle = ref["success_random"], ref["success_oracle"]
        noise = report.get("noise")
        interval = (report.get("intervals") or {}).get("headroom_cf")
        paper = shortfall(random, oracle)
        rows.append(DiscriminationRow(
            setting=setting, random=random, oracle_minus_random=oracle - random,
            noise=noise if noise and noise.get("headroom_cf") is not None else None,
            headroom_cf_interval=None if not interval else (interval["low"], interval["high"]),
            discriminates=None if not noise else noise.get("discriminates"),
            reason=None if not noise else noise.get("reason"),
            paper_discriminates=paper is None, paper_reason=paper))
    return rows


# ---------------------------------------------------------------- result 3: discrimination gap


@dataclass(frozen=True)
class GapFinding:
    """Result 3: significant gaps by mechanism and sign, and where they are larger."""

    cases_with_gap: int
    inside_envelope: int
    significant: tuple[RuleCase, ...]
    by_mechanism: dict
    appearance_larger: int
    split_cases: int


def larger_on_appearance(case: RuleCase) -> bool | None:
    """True when the gap is further in its own direction on the appearance subset than on layout."""
    if case.appearance_gap is None or case.layout_gap is None or case.gap_direction is None:
        return None
    if case.gap_direction == "below":
        return case.appearance_gap < case.layout_gap
    return case.appearance_gap > case.layout_gap


def gap_finding(cases: list[RuleCase]) -> GapFinding:
    """Counts over the cases with a gap (selection-only and random rows have none)."""
    with_gap = [c for c in cases if c.gap is not None]
    significant = tuple(c for c in with_gap if c.gap_direction is not None)
    by_mechanism: dict[str, dict[str, int]] = {}
    for case in significant:
        counts = by_mechanism.setdefault(case.setting.mechanism, {"above": 0, "below": 0})
        counts[case.gap_direction] += 1
    split = [larger_on_appearance(c) for c in significant]
    return GapFinding(cases_with_gap=len(with_gap),
                      inside_envelope=len(with_gap) - len(significant),
                      significant=significant, by_mechanism=by_mechanism,
                      appearance_larger=sum(s is True for s in split),
                      split_cases=sum(s is not None for s in split))


# ---------------------------------------------------------------- result 4: prediction vs ranking


@dataclass(frozen=True)
class AurocFinding:
    """Result 4: pooled against within-query AUROC; `groups` as in the paper's Table IV."""

    cases: tuple[RuleCase, ...]
    within_lower: int
    pooled_range_k50: tuple[float, float] | None
    within_range_k50: tuple[float, float] | None
    groups: tuple[tuple[str, tuple | None, tuple | None, int], ...]
    """Per paper Table IV group (`paper.TABLE_IV` order): name, pooled range, within range, cases."""


def _group_of(case: RuleCase) -> str | None:
    mechanism = "policy" if case.setting.mechanism in ("policy", "policy_dr") else case.setting.mechanism
    for row in paper.TABLE_IV:
        if row.mechanism == mechanism and row.k == case.setting.k:
            return row.group
    return None


def _range(values: list[float]) -> tuple[float, float] | None:
    return (min(values), max(values)) if values else None


def auroc_finding(cases: list[RuleCase], k_large: int = 50) -> AurocFinding:
    """Cases with both AUROCs defined; ranges at K = `k_large`."""
    both = tuple(c for c in cases if c.pooled_auroc is not None and c.within_query_auroc is not None)
    at_k = [c for c in both if c.setting.k == k_large]
    groups = []
    for row in paper.TABLE_IV:
        members = [c for c in both if _group_of(c) == row.group]
        groups.append((row.group, _range([c.pooled_auroc for c in members]),
                       _range([c.within_query_auroc for c in members]), len(members)))
    return AurocFinding(
        cases=both, within_lower=sum(c.within_query_auroc < c.pooled_auroc for c in both),
        pooled_range_k50=_range([c.pooled_auroc for c in at_k]),
        within_range_k50=_range([c.within_query_auroc for c in at_k]), groups=tuple(groups))


# ---------------------------------------------------------------- everything


@dataclass(frozen=True)
class Findings:
    """All four results plus what could not be measured."""

    library: tuple[LibraryRow, ...]
    concentration: ConcentrationFinding
    gaps: GapFinding
    auroc: AurocFinding
    visual_cases: tuple[RuleCase, ...]
    audited_cases: tuple[RuleCase, ...]
    not_computed: tuple[StoredReport, ...]
    missing_settings: tuple[tuple[SettingInfo, str], ...]
    own_base: dict
    cross_scene: dict
    discrimination: tuple[DiscriminationRow, ...] = ()


def cross_scene_success(store: ReportStore) -> dict[str, float]:
    """Mean success of each experience over a Replay query set (its `quality`).

    Taken from the largest complete Replay library that holds the experience,
    the paper's "cross-scene success" (compared with own-base success).
    """
    out: dict[str, float] = {}
    replay = [s for s in store.settings() if s.mechanism == "replay"]
    for setting in sorted(replay, key=lambda s: -s.k):
        report = _any_report(store, setting.setting_id)
        if report is not None:
            for experience, value in report["reference"]["quality"].items():
                out.setdefault(experience, value)
    return out


def compute_findings(store: ReportStore) -> Findings:
    """Results 1-4 from a report store (the paper's visual rules for 3 and 4, as in its Fig. 1 / Table IV)."""
    audited = rule_cases(store, AUDITED_RULES)
    visual = rule_cases(store, VISUAL_RULES)
    return Findings(
        library=tuple(library_rows(store)),
        concentration=concentration_finding(audited),
        gaps=gap_finding(visual),
        auroc=auroc_finding(visual),
        visual_cases=tuple(visual),
        audited_cases=tuple(audited),
        not_computed=tuple(s for s in store.reports if not s.computed),
        missing_settings=store.missing,
        own_base=store.own_base,
        cross_scene=cross_scene_success(store),
        discrimination=tuple(discrimination_rows(store)))
