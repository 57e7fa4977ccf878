"""The reference reports' pages: each written report has an HTML page beside it with both of
the paper's plots, drawn from the published JSON alone; the dev report is published whole
(per-initialization values and curves), the confirm page shows none of its sealed labels."""

from __future__ import annotations

import json
import re

import pytest

from benchmark_data.generation import readout_features as rf
from benchmark_data.generation import readout_reports as rr
from tests.support.readout_bank import SMALL, reference_root

RESPONSE = re.compile(r"<title>([^<]*): prediction against actual coordinate per context, initialization ([^<]*)</title>")
SCATTER = "<title>Natural MAE against endpoint gain, per representation</title>"


@pytest.fixture
def root(tmp_path):
    return reference_root(tmp_path)


def _figures(page: str) -> list[tuple[str, str]]:
    return RESPONSE.findall(page)


def test_the_dev_report_is_written_whole_with_its_page_and_every_curve_drawn(root, tmp_path):
    root, sealed = root
    paths = rr.write_reference_reports(split="dev", root=root, sealed_labels=sealed, min_estimable=SMALL,
                                       sealed=tmp_path / "kept")
    assert not (tmp_path / "kept").exists()  # a public split keeps nothing aside
    for task, path in zip(rf.TASKS, paths):
        report = json.loads(path.read_text())
        page = rr.html_path(task, "dev", root).read_text()
        assert page.count(SCATTER) == 1
        drawn = _figures(page)
        expected = [(rep["name"], curve["initialization"]) for rep in report["representations"]
                    for curve in rep["curves"]]
        assert expected and sorted(drawn) == sorted(expected)
        for rep in report["representations"]:
            assert len(rep["initializations"]) == 8 and rep["curves"]
            # every point of every context is drawn, with its coordinate and prediction
            for curve in rep["curves"]:
                for context in curve["contexts"]:
                    for q, p in zip(context["coordinate"], context["prediction"]):
                        assert f"context {context['context']}: q {q:.3g}, prediction {p:.3g}" in page
            assert f"{rep['name']}: natural MAE {rep['summary']['mae_natural']['mean']:.3g}, " \
                   f"gain {rep['summary']['gain']['mean']:.3g}" in page
        assert rr.DEV_FAILURE_NOTE in report["notes"] and rr.DEV_FAILURE_NOTE in page


def test_pages_are_rendered_again_from_the_written_json_alone(root, tmp_path):
    root, sealed = root
    rr.write_reference_reports(split="dev", root=root, sealed_labels=sealed, min_estimable=SMALL)
    pages = [rr.html_path(task, "dev", root) for task in rf.TASKS]
    before = [p.read_text() for p in pages]
    for page in pages:
        page.unlink()
    assert rr.main(["--split", "dev", "--html-only", "--root", str(root)]) == 0
    assert [p.read_text() for p in pages] == before


def test_html_only_without_a_written_report_says_which(tmp_path, capsys):
    assert rr.main(["--split", "dev", "--html-only", "--root", str(tmp_path)]) == 2
    assert "door: no reference report at reports/reference-dev.json" in capsys.readouterr().err


def test_the_confirm_page_draws_the_scatter_and_no_sealed_label(root, tmp_path):
    root, sealed = root
    rr.write_reference_reports(split="confirm", root=root, sealed_labels=sealed, min_estimable=SMALL,
                               sealed=tmp_path / "kept")
    for task in rf.TASKS:
        page = rr.html_path(task, "confirm", root).read_text()
        whole = json.loads(rr.sealed_report_path(task, "confirm", tmp_path / "kept").read_text())
        assert page.count(SCATTER) == 1 and not _figures(page)
        points = [f"q {q:.3g}, prediction {p:.3g}" for rep in whole["representations"] for curve in rep["curves"]
                  for context in curve["contexts"] for q, p in zip(context["coordinate"], context["prediction"])]
        assert points and not [p for p in points if p in page]


@pytest.mark.parametrize("task", rf.TASKS)
def test_the_committed_dev_reports_have_their_pages_and_stay_small(task):
    """The committed dev report and its page: the page is the JSON rendered, and both are small."""
    from leaderboard.site.readout_report import render_readout_html

    for split in ("dev", "confirm"):
        path, page = rr.report_path(task, split), rr.html_path(task, split)
        assert page.read_text() == render_readout_html(json.loads(path.read_text())), (
            f"{page.name} is not its JSON rendered: python -m benchmark_data.generation.readout_reports "
            f"--split {split} --html-only")
        assert path.stat().st_size < 1_000_000 and page.stat().st_size < 1_000_000
