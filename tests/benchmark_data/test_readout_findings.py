"""Each bank version's findings page (docs/readout_findings.md for version 2,
docs/readout_findings_v1.md for version 1) states its reference reports' numbers: every reference
row and every primary test of both tasks appears in its tables as the committed reports give it,
and the page names each representation the reports could not compute."""

from __future__ import annotations

import json

import pytest

from tests.support.paths import REPO_ROOT

PAGES = {"v1": REPO_ROOT / "docs" / "readout_findings_v1.md", "v2": REPO_ROOT / "docs" / "readout_findings.md"}
REPORTS = REPO_ROOT / "benchmark_data" / "frozen" / "readout"
DIGITS = {"deg": 2, "mm": 1}
"""Decimals of the page's MAE and context-sensitivity columns, by unit."""


def _report(task: str, bank: str) -> dict:
    return json.loads((REPORTS / f"{task}-{bank}" / "reports" / "reference-confirm.json").read_text())


def _interval(block: dict, digits: int) -> str:
    return f"{block['mean']:.{digits}f} [{block['low']:.{digits}f}, {block['high']:.{digits}f}]"


def _p(value: float) -> str:
    return f"{value:.2e}" if value < 1e-3 else f"{value:.4f}"


@pytest.fixture(scope="module", params=sorted(PAGES))
def bank(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def rows(bank) -> set[str]:
    return {line.strip() for line in PAGES[bank].read_text().splitlines() if line.startswith("|")}


@pytest.mark.parametrize("task", ["door", "stack"])
def test_every_reference_row_is_on_the_page(task, bank, rows):
    report = _report(task, bank)
    digits = DIGITS[report["bank"]["unit"]]
    for rep in report["representations"]:
        s = rep["summary"]
        row = (f"| {rep['name']} | {_interval(s['mae_natural'], digits)} | "
               f"{_interval(s['mae_controlled'], digits)} | {_interval(s['gain'], 3)} | "
               f"{_interval(s['gain_error'], 3)} | {_interval(s['context_sensitivity'], digits)} | "
               f"{s['gain']['n']} |")
        assert row in rows, row


@pytest.mark.parametrize("task", ["door", "stack"])
def test_every_primary_test_is_on_the_page_with_its_family_adjustment(task, bank, rows):
    report = _report(task, bank)
    tests = {t["test_id"]: t for t in report["primary_tests"]["tests"]}
    assert report["primary_tests"]["family_size"] == 36
    for rep in report["representations"]:
        cells = []
        for key in ("gain_below_one", "controlled_above_natural"):
            t = tests[f"{task}/{rep['name']}/{key}"]
            cells += [f"{t['n_positive']} / {t['n_positive'] + t['n_negative']}", _p(t["p_value"]),
                      _p(t["p_holm"])]
        row = f"| {rep['name']} | " + " | ".join(cells) + " |"
        assert row in rows, row


def test_the_page_names_what_was_not_computed(bank):
    text = PAGES[bank].read_text()
    missing = [row for task in ("door", "stack") for row in _report(task, bank)["not_computed"]]
    if missing:
        for row in missing:
            assert row["name"] in text and row["reason"] in text
    else:
        assert "## Representations not computed\n\nNone:" in text
