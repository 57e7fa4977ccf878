#!/usr/bin/env python
"""Render docs/findings.md from stored audit reports; with --compute, compute the reports first.

    scripts/make_findings.py                     # render from build/reference_reports
    scripts/make_findings.py --compute           # audit every rule on every complete setting, then render
    scripts/make_findings.py --compute --settings ID ...   # audit only these, keep the others' reports

--compute runs every reference rule (outcome-based, structural and
embedding) on every setting whose transfer matrix is complete
(the frozen data's `load_transfer`), through `run_audit` with the
audit's default seed and counts, and rewrites the report directory; settings
that are incomplete, sealed or not built are recorded with the reason.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmark_data.frozen import load_transfer, own_base_success  # noqa: E402
from benchmark_data.library import LibraryNotFoundError  # noqa: E402
from benchmark_data.policy_files import POLICY_MECHANISMS, is_trained, policy_dir  # noqa: E402
from benchmark_data.query_sets import QuerySetNotFoundError  # noqa: E402
from benchmark_data.registry import SETTINGS, get_setting  # noqa: E402
from expaudit.errors import UserError  # noqa: E402
from leaderboard.findings.measure import compute_findings  # noqa: E402
from leaderboard.findings.page import render_findings  # noqa: E402
from leaderboard.findings.store import (SettingInfo, compute_rule_reports, kept_reports,  # noqa: E402
                                        load_store, replace_reports)
from leaderboard.metrics import defaults  # noqa: E402
from leaderboard.rules.embeddings.setting_scores import image_rule_scores  # noqa: E402
from leaderboard.rules.structural import structural_rule_scores  # noqa: E402
from simulator.provenance import policy_mechanism_of  # noqa: E402

POLICY_MECHANISM_IDS = {m.value for m in POLICY_MECHANISMS}


def _info(setting, root=None) -> SettingInfo:
    """The findings' record of a setting; for a policy setting, the version of its policies
    under `root` (all of a setting's policies share one; None when they are not trained)."""
    order = list(SETTINGS).index(setting.id)
    if setting.mechanism.value not in POLICY_MECHANISM_IDS:
        return SettingInfo(setting, order=order)
    versions = {policy_mechanism_of(str(policy_dir(setting.mechanism.value, e, root)))
                for e in setting.experience_ids if is_trained(setting.mechanism.value, e, root)}
    return SettingInfo(setting, order=order, policy_mechanism=versions.pop() if len(versions) == 1 else None)


def _status(setting, root) -> tuple[object | None, str | None]:
    """(complete TransferData, None) or (None, why the setting is not measured)."""
    if setting.sealed:
        return None, "sealed query set: its outcomes are never published"
    try:
        data = load_transfer(setting.id, root)
    except QuerySetNotFoundError:
        return None, f"not built in this release: query set '{setting.query_set}' is not in the frozen data"
    except LibraryNotFoundError:
        return None, f"not built in this release: library '{setting.library_id}' is not in the frozen data"
    if data.is_complete:
        return data, None
    done = data.outcomes.size - data.n_missing
    return None, (f"matrix incomplete: {done} of {data.outcomes.size} outcomes "
                  "(K x Q x S) stored")


def compute(directory: Path, root, cache_dir: Path, args) -> None:
    """Rewrite the report directory from the frozen data: every setting's reports, or with
    --settings only those settings' (the other settings' reports are kept). Reports are
    computed beside the directory and put in place at the end, so an error or an interrupt
    leaves it as it was."""
    chosen = None if args.settings is None else {get_setting(s).id for s in args.settings}
    kept = kept_reports(directory, chosen)
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        missing, own_base = _compute_into(work, root, cache_dir, args, chosen, kept)
        replace_reports(directory, work, chosen, missing, own_base)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compute_into(work: Path, root, cache_dir: Path, args, chosen, kept) -> tuple[list, dict]:
    """Audit the chosen settings into `work`; (the settings not measured, with the kept ones;
    the own-base figures, with the kept ones)."""
    missing, libraries = list(kept.missing), set()
    for setting in SETTINGS.values():
        if chosen is not None and setting.id not in chosen:
            continue
        data, reason = _status(setting, root)
        if data is None:
            missing.append((_info(setting, root), reason))
            print(f"{setting.id}: skipped ({reason})")
            continue
        start = time.time()
        extra = structural_rule_scores(setting, data, root)
        extra.update(image_rule_scores(setting, data, root, cache_dir))
        compute_rule_reports(work, _info(setting, root), data, extra, n_shuffles=args.n_shuffles,
                             n_bootstrap=args.n_bootstrap, seed=args.seed)
        libraries.add(setting.library_id)
        skipped = {rule: why for rule, why in extra.items() if isinstance(why, str)}
        print(f"{setting.id}: {5 + len(extra) - len(skipped)} rules audited, "
              f"{len(skipped)} not computed, {time.time() - start:.1f} s")
    missing.sort(key=lambda item: item[0].order)
    return missing, {**kept.own_base, **{lib: own_base_success(lib, root) for lib in sorted(libraries)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, default=REPO / "build" / "reference_reports",
                        help="report directory (read, and rewritten with --compute)")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "findings.md")
    parser.add_argument("--compute", action="store_true", help="audit every complete setting first")
    parser.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    parser.add_argument("--embedding-cache", type=Path, default=REPO / "build" / "embedding_cache")
    parser.add_argument("--settings", nargs="+",
                        help="with --compute: recompute only these setting ids, keeping the "
                             "other settings' stored reports")
    parser.add_argument("--n-shuffles", type=int, default=defaults.N_SHUFFLES)
    parser.add_argument("--n-bootstrap", type=int, default=defaults.N_BOOTSTRAP)
    parser.add_argument("--seed", type=int, default=defaults.SEED)
    args = parser.parse_args(argv)
    if args.settings is not None and not args.compute:
        parser.error("--settings only applies with --compute")
    try:
        if args.compute:
            compute(args.reports, args.root, args.embedding_cache, args)
        findings = compute_findings(load_store(args.reports))
    except UserError as exc:
        print(f"make_findings: {exc}", file=sys.stderr)
        return 2
    source = args.reports.relative_to(REPO) if args.reports.is_relative_to(REPO) else args.reports
    args.output.write_text(render_findings(findings, str(source)))
    print(f"wrote {args.output} ({len(findings.library)} settings, "
          f"{len(findings.audited_cases)} audited rule cases, {len(findings.missing_settings)} "
          f"settings not measured)")
    print(json.dumps({"settings": [r.setting.setting_id for r in findings.library]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
