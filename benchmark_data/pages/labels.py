"""The discrimination label of a setting on the data pages: the noise-aware rule, the paper's bar
beside it, and the numbers the rule reads (docs/policy_protocol.md, "Amendment").

The label comes from `leaderboard.metrics.discrimination.setting_label` on the seeds whose
K x Q slice is complete, with the audit's default seed and resample counts, so it is the label
the leaderboard shows for the same tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchmark_data.frozen import load_transfer
from leaderboard.matrix import MISSING, TransferData
from leaderboard.metrics.discrimination import MIN_GAP, SettingLabel, setting_label

__all__ = ["label_of", "labels_table", "paper_bar_txt", "rule_txt"]

MIN_SEEDS = 2
"""Complete seeds the rule needs: the cross-fitted oracle chooses on one and scores another."""


def label_of(data: TransferData) -> SettingLabel | None:
    """The label over the complete seeds of `data`; None with fewer than `MIN_SEEDS` of them."""
    seeds = [s for s in range(data.outcomes.shape[2]) if (data.outcomes[:, :, s] != MISSING).all()]
    if len(seeds) < MIN_SEEDS:
        return None
    return setting_label(data.outcomes[:, :, seeds], np.asarray(data.scenes.state_ids))


def rule_txt(label: SettingLabel | None) -> str:
    """"yes", "no: <what misses the rule, measured>", or why there is no label yet."""
    if label is None:
        return f"not known: fewer than {MIN_SEEDS} complete seeds"
    return "yes" if label.discriminates else f"no: {label.reason}"


def paper_bar_txt(label: SettingLabel | None) -> str:
    """The paper's bar beside the label: "met" or "missed: <what misses it>"."""
    if label is None:
        return "n/a"
    return "met" if label.paper_discriminates else f"missed: {label.paper_reason}"


def _interval(label: SettingLabel) -> str:
    interval = label.headroom_cf
    if interval.low is None:
        return f"no interval: {interval.reason}"
    return f"[{interval.low:.3f}, {interval.high:.3f}]"


def labels_table(setting_ids: Sequence[str], root=None) -> str:
    """A Markdown table: each setting's oracle bracket, headroom_cf with its interval, the noise
    null's 95th percentile and p-value, the label and the paper's bar."""
    lines = ["| setting | random | oracle - random | oracle bracket (cross-fitted to plain) "
             "| headroom_cf [95% interval] | noise null: 95th percentile, p | discriminates "
             f"| paper's bar (oracle - random >= {MIN_GAP:.2f}) |",
             "|---|---|---|---|---|---|---|---|"]
    for setting_id in setting_ids:
        label = label_of(load_transfer(setting_id, root))
        if label is None:
            lines.append(f"| {setting_id} | {rule_txt(label)} | | | | | | |")
            continue
        noise = label.noise
        lines.append(f"| {setting_id} | {label.random:.3f} | {label.oracle - label.random:.3f} "
                     f"| {noise.success_oracle_cf:.3f} to {label.oracle:.3f} "
                     f"| {noise.headroom_cf:.3f} {_interval(label)} "
                     f"| {noise.null_p95:.3f}, p = {noise.null_p_value:.4f} "
                     f"| {rule_txt(label)} | {paper_bar_txt(label)} |")
    return "\n".join(lines)


LABELS_HEAD = """

## Does the setting discriminate? The noise-aware rule, and the paper's bar beside it

At K = 3 and 5 seeds, `oracle - random` is inflated by execution noise alone
(identical experiences give about 0.10), so the label is the noise-aware rule
adopted in `docs/policy_protocol.md` ("Amendment"): random success within
0.30-0.85 and the lower end of the state-clustered 95% interval of
**headroom_cf** (the cross-fitted oracle, which chooses on four seeds and
scores on the fifth, minus random) above 0. The **oracle bracket** runs from
the cross-fitted oracle (a lower end for the noise-free oracle) to the plain
one (an upper end). The **noise null** is `oracle - random` when every
experience of a scene is interchangeable (2,000 resamples); its 95th
percentile and the one-sided p-value of the observed value say how much of
`oracle - random` noise alone explains. The paper's bar is shown for
comparison and is not the label. Seed and resample counts are the audit's
defaults, so each label is the one the leaderboard shows.

"""
