"""Each bank version's findings page is the generator's output for its committed reports, and
its verdicts follow the numbers (checked on version 1's reports): a pair whose gain interval reaches 1, or whose policies fail
differently, changes the page's words, not only its tables."""

from __future__ import annotations

import copy

import pytest

from benchmark_data.generation import readout_findings as rfind


@pytest.fixture(scope="module")
def inputs() -> dict:
    return rfind.load_inputs(bank_version="v1")


def _prose(page: str) -> str:
    """The page with its line breaks as spaces (paragraphs are wrapped)."""
    return " ".join(page.split())


@pytest.mark.parametrize("bank", sorted(rfind.PAGES))
def test_the_committed_page_is_the_generators_output(bank):
    assert rfind.PAGES[bank].read_text() == rfind.render(rfind.load_inputs(bank_version=bank))


def test_check_mode_reports_a_hand_edited_page(tmp_path, capsys):
    page = tmp_path / "findings.md"
    assert rfind.main(["--bank", "v1", "--out", str(page)]) == 0
    assert rfind.main(["--bank", "v1", "--check", "--out", str(page)]) == 0
    page.write_text(page.read_text().replace("0.776 [0.733, 0.820]", "0.976 [0.733, 0.820]"))
    assert rfind.main(["--bank", "v1", "--check", "--out", str(page)]) == 1
    assert "differs from the reports" in capsys.readouterr().out


def test_a_gain_interval_reaching_one_changes_the_verdicts(inputs):
    changed = copy.deepcopy(inputs)
    rep = changed["stack"]["report"]["representations"][0]
    rep["summary"]["gain"]["high"] = 1.02
    page = _prose(rfind.render(changed))
    assert "**Holds here in 17 of 18 task x representation pairs, not in the other 1.**" in page
    assert "**Here the pattern holds for the free object in 8 of 9 pairs.**" in page
    assert "the highest upper end of a gain interval is 1.020 (Stack, policy/stack-e000)" in page


def test_every_model_of_a_fitted_policy_is_on_the_page_with_its_losses(inputs):
    page = rfind.render(inputs)
    rows = {line for line in page.splitlines() if line.startswith("| ")}
    fitted = 0
    for task in ("door", "stack"):
        for rep in inputs[task]["report"]["representations"]:
            block = rep["failure_prediction"]["policies"].get(rep["name"])
            if not block or block.get("reason"):
                continue
            fitted += 1
            models = [f"{block['models'][m]['brier']:.4f} / {block['models'][m]['log_loss']:.4f}"
                      for m in ("M0", "MC", "MGR", "MCGR")]
            row = [r for r in rows if r.startswith(f"| {task} | {rep['name']} | {block['n_eval_rows']} |")]
            assert len(row) == 1 and " | ".join(models) in row[0]
    assert fitted >= 1


def test_a_policy_whose_diagnostics_lower_both_losses_turns_the_verdict(inputs):
    changed = copy.deepcopy(inputs)
    for rep in changed["door"]["report"]["representations"]:
        block = rep["failure_prediction"]["policies"].get(rep["name"])
        if block and not block.get("reason"):
            for d in block["differences"]:
                if d["comparison"] in ("MC - M0", "MGR - M0"):
                    d.update(mean=-0.05, low=-0.08, high=-0.01)
    page = _prose(rfind.render(changed))
    assert "**Holds here for 1 of 3 fitted policies.**" in page
    assert "lie below 0 for both losses; 1 of 3 do" in page
