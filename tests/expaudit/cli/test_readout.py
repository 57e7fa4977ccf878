"""`expaudit readout audit` end to end on a synthetic bank: outputs, determinism, errors."""

import json

import pandas as pd
import pytest

from expaudit.cli import main
from tests.support.readout_bank import write_bank

FAST = ["--bootstrap", "200", "--min-estimable", "4"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_bank(tmp_path_factory.mktemp("readout-cli"))


def _args(files, *extra):
    return ["readout", "audit", "--bank", str(files["bank"]), "--sealed-labels", str(files["sealed"]),
            "--features", f"weak={files['weak']}", "--predictions", str(files["perfect"]), *FAST, *extra]


def test_writes_json_and_html(files, tmp_path):
    out_json, out_html = tmp_path / "r.json", tmp_path / "r.html"
    assert main(_args(files, "--json", str(out_json), "--html", str(out_html))) == 0
    report = json.loads(out_json.read_text())
    assert report["schema_version"] == "expaudit-readout-report/1"
    assert report["inputs"]["split"] == "confirm" and report["inputs"]["n_bootstrap"] == 200
    assert [r["name"] for r in report["representations"]] == ["weak", "perfect"]
    page = out_html.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 1 + 2 * 3
    assert "a constant readout also scores 0 here" in page
    again = tmp_path / "again.json"
    assert main(_args(files, "--json", str(again))) == 0
    assert again.read_text() == out_json.read_text()


def test_prints_a_summary_without_json(files, capsys):
    assert main(_args(files)) == 0
    out = capsys.readouterr().out
    assert out.startswith("weak: natural MAE ") and "door/weak/gain_below_one (gain[s] < 1): 5 of 5" in out


def test_without_sealed_labels_audits_dev(files, tmp_path):
    out = tmp_path / "dev.json"
    assert main(["readout", "audit", "--bank", str(files["bank"]), "--features", str(files["weak_shards"]),
                 *FAST, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["inputs"]["split"] == "dev" and report["representations"][0]["name"] == "weak-shards"


def test_bad_field_is_named(files, tmp_path, capsys):
    frame = pd.read_csv(files["perfect"], dtype=str)
    frame.loc[4, "prediction"] = "oops"
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    args = ["readout", "audit", "--bank", str(files["bank"]), "--predictions", str(bad), *FAST]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err == f"expaudit readout: error: {bad} line 6, field 'prediction': value 'oops' is not a finite number\n"


def test_bad_bank_json_is_named(files, tmp_path, capsys):
    import shutil

    bank = tmp_path / "bank"
    shutil.copytree(files["bank"], bank)
    info = json.loads((bank / "bank.json").read_text())
    info["min_endpoint_separation"] = -1
    (bank / "bank.json").write_text(json.dumps(info))
    assert main(["readout", "audit", "--bank", str(bank), "--features", str(files["weak"]), *FAST]) == 2
    assert capsys.readouterr().err == (
        f"expaudit readout: error: {bank / 'bank.json'}, field 'min_endpoint_separation': value '-1' must be a "
        "positive number (the minimum endpoint separation)\n")


def test_needs_a_representation(files, capsys):
    assert main(["readout", "audit", "--bank", str(files["bank"])]) == 2
    assert "at least one --features or --predictions" in capsys.readouterr().err
