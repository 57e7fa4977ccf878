"""`expaudit selector demo-input` and `expaudit selector run`, end to end in the local sandbox."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import pytest

from expaudit.cli import sandbox as cli
from tests.support.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "selectors"


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="expaudit")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="the local sandbox needs root and unshare")
def test_demo_input_then_run_example(tmp_path, capsys):
    assert _main(["selector", "demo-input", str(tmp_path / "in"), "--scenes", "4"]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'in'}: 3 experiences, 4 scenes\n"
    (tmp_path / "out").mkdir()
    code = _main(["selector", "run", str(EXAMPLES / "object-proximity"), "--input",
                  str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--wall-seconds", "20"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["status"] == "ok" and result["image_digest"].startswith("sha256:")
    assert len((tmp_path / "out" / "scores.csv").read_text().splitlines()) == 1 + 3 * 4


def test_run_reports_bad_arguments(tmp_path, capsys):
    assert _main(["selector", "run", str(EXAMPLES / "raw32"), "--input", str(tmp_path),
                  "--output", str(tmp_path / "out")]) == 2
    assert "setting.json: not a readable setting.json" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _main(["selector", "run", "x", "--input", "i", "--output", "o", "--pids", "0"])
    assert "argument --pids: value '0' must be positive" in capsys.readouterr().err


def test_demo_input_refuses_non_empty_directory(tmp_path, capsys):
    (tmp_path / "left.txt").write_text("x")
    assert _main(["selector", "demo-input", str(tmp_path)]) == 2
    assert (f"field 'directory': input directory '{tmp_path}' is not empty"
            in capsys.readouterr().err)
