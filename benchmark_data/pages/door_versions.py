"""The Door policy settings' figures by data version (issue 38): before and after the ajar
states were made valid, for the changelog (`scripts/door_revision.py compare`)."""

from __future__ import annotations

from benchmark_data.generation.door_revision import DOOR_POLICY_SETTINGS
from benchmark_data.pages.labels import label_of, rule_txt
from benchmark_data.pages.policy_settings import summarize_policy
from benchmark_data.versions import DATA_VERSION, load_transfer_at


def setting_numbers(setting_id: str, version: str | None = None, root=None) -> dict:
    """A Door setting's figures as of data `version` (None: the current one): random, oracle,
    best fixed (its success), oracle - random, headroom_cf with its 95% interval and the label
    (`benchmark_data.pages.labels.label_of`, the current rule)."""
    data = load_transfer_at(setting_id, version, root)
    summary, label = summarize_policy(data.outcomes), label_of(data)
    interval = label.headroom_cf if label is not None else None
    return {"setting": setting_id, "version": version or DATA_VERSION,
            "seeds": len(summary.seeds_complete), "random": summary.random, "oracle": summary.oracle,
            "best_fixed": summary.best_fixed_success, "oracle_random": summary.oracle - summary.random,
            "headroom_cf": None if label is None else label.noise.headroom_cf,
            "interval": None if interval is None else (interval.low, interval.high),
            "label": rule_txt(label)}


def numbers_table(versions: list[str], root=None) -> str:
    """The Door settings' figures by version, as a Markdown table (the changelog's)."""
    lines = ["| setting | data version | random | oracle | best fixed | oracle - random "
             "| headroom_cf [95% interval] | label |", "|---|---|---|---|---|---|---|---|"]
    for setting_id in DOOR_POLICY_SETTINGS:
        for version in versions:
            n = setting_numbers(setting_id, version, root)
            low, high = n["interval"] or (None, None)
            interval = "no interval" if low is None else f"[{low:.3f}, {high:.3f}]"
            lines.append(f"| {setting_id} | {n['version']} | {n['random']:.3f} | {n['oracle']:.3f} "
                         f"| {n['best_fixed']:.3f} | {n['oracle_random']:.3f} "
                         f"| {n['headroom_cf']:.3f} {interval} | {n['label']} |")
    return "\n".join(lines)
