"""`expaudit audit` end to end on the shipped toy matrix: output, determinism, exit codes."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from expaudit.cli import main
from tests.support.paths import REPO_ROOT

TOY = REPO_ROOT / "examples" / "toy"
FAST = ["--shuffles", "300", "--bootstrap", "300"]


def _args(scores="scores.csv", folder=TOY):
    return [
        "audit",
        "--experiences",
        str(folder / "experiences.csv"),
        "--outcomes",
        str(folder / "outcomes.csv"),
        "--scenes",
        str(folder / "scenes.csv"),
        "--scores",
        str(folder / scores),
    ]


def test_toy_files_are_what_make_toy_writes(tmp_path):
    subprocess.run([sys.executable, str(TOY / "make_toy.py"), str(tmp_path)], check=True)
    for name in ("experiences.csv", "scenes.csv", "outcomes.csv", "scores.csv", "selections.csv"):
        assert (tmp_path / name).read_bytes() == (TOY / name).read_bytes(), name


def test_summary_leads_with_selection_and_best_fixed(capsys):
    assert main(_args() + FAST) == 0
    out = capsys.readouterr().out
    sections = out.split("\n\n")
    assert sections[0].startswith("Audit of 10 experiences x 60 scenes x 5 seeds (12 states)")
    assert sections[1].startswith("Selection distribution (rule vs oracle")
    assert sections[2].startswith("Best fixed: e03")
    assert "Verdict:" in sections[-1]


def test_json_is_byte_identical_for_the_same_seed(tmp_path, capsys):
    first, second, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    assert main(_args() + FAST + ["--seed", "5", "--json", str(first)]) == 0
    assert main(_args() + FAST + ["--seed", "5", "--json", str(second)]) == 0
    assert main(_args() + FAST + ["--seed", "6", "--json", str(other)]) == 0
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()
    report = json.loads(first.read_text())
    assert report["inputs"]["seed"] == 5 and report["inputs"]["n_shuffles"] == 300
    assert capsys.readouterr().out == ""


def test_console_script_writes_json_and_html(tmp_path):
    script = shutil.which("expaudit", path=str(Path(sys.executable).parent))
    assert script is not None
    result = subprocess.run(
        [script] + _args() + FAST + ["--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["schema_version"]
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_selection_only_input(capsys):
    assert main(_args("selections.csv") + FAST) == 0
    out = capsys.readouterr().out
    assert "[selection-only input]" in out
    assert "AUROC not computable: selection-only input" in out


def test_bad_input_exits_2_with_one_line_naming_file_line_field(tmp_path, capsys):
    for name in ("experiences.csv", "outcomes.csv", "scenes.csv"):
        shutil.copy(TOY / name, tmp_path / name)
    lines = (TOY / "scores.csv").read_text().splitlines()
    lines[16] = lines[16].rsplit(",", 1)[0] + ",nan"
    (tmp_path / "scores.csv").write_text("\n".join(lines) + "\n")
    assert main(_args(folder=tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("expaudit audit: error: ")
    assert "scores.csv line 17, field 'score': value 'nan' is not a finite number" in err


def test_unwritable_output_exits_2(tmp_path, capsys):
    assert main(_args() + FAST + ["--json", str(tmp_path / "missing" / "r.json")]) == 2
    assert "r.json: cannot be written: No such file or directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--shuffles", "0", "must be a positive integer, got 0"),
        ("--bootstrap", "many", "'many' is not an integer"),
        ("--seed", "-1", "must be a non-negative integer, got -1"),
    ],
)
def test_bad_counts_exit_2(flag, value, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(_args() + [flag, value])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_selection_only_summary_states_diagnostics_once(capsys):
    assert main(_args("selections.csv") + FAST) == 0
    out = capsys.readouterr().out
    assert "Diagnostics (use labels; not methods)\n  not computable: selection-only input" in out
    assert "CSLS" not in out
