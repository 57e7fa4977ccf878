"""`expaudit readout run`: a readout program in the local sandbox on a readout /input tree, its
features checked as the service checks them (against the tree's observations)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from expaudit.cli import main
from sandbox.readout_protocol import SplitImages, prepare_readout_input
from tests.support.paths import REPO_ROOT
from tests.support.selectors import SANDBOX_OK

pytestmark = pytest.mark.skipif(not SANDBOX_OK, reason="the local sandbox needs root, unshare and setpriv")

PROGRAM = REPO_ROOT / "examples" / "readout_programs" / "pooled8"


@pytest.fixture()
def tree(tmp_path):
    rng = np.random.default_rng(0)
    images = {split: SplitImages(np.array([f"{split}-{i}" for i in range(4)]),
                                 {c: rng.integers(0, 256, (4, 16, 16, 3), dtype=np.uint8)
                                  for c in ("agentview", "wrist")})
              for split in ("train", "dev", "confirm")}
    labels = pd.DataFrame([{"observation_id": f"{s}-{i}", "split": s, "initialization": f"{s}-i0",
                            "kind": "natural", "coordinate": float(i)} for s in ("train", "dev") for i in range(4)])
    return prepare_readout_input(tmp_path / "in", {"setting_id": "door-readout-v1", "task": "door"}, images, labels)


def _run(capsys, program, tree, output) -> tuple[int, dict]:
    output.mkdir()
    status = main(["readout", "run", str(program), "--input", str(tree), "--output", str(output),
                   "--wall-seconds", "60"])
    return status, json.loads(capsys.readouterr().out)


def test_the_example_program_writes_checked_features(capsys, tree, tmp_path):
    status, shown = _run(capsys, PROGRAM, tree, tmp_path / "out")
    assert status == 0 and shown["status"] == "ok", shown
    assert shown["features"] == [12, 384]


def test_features_missing_a_confirm_row_are_named(capsys, tree, tmp_path):
    program = tmp_path / "short"
    program.mkdir()
    (program / "selector.py").write_text(
        "import numpy as np, os\n"
        "with np.load(os.environ['EXPAUDIT_INPUT'] + '/images/train.npz') as z:\n"
        "    ids = z['observation_id']\n"
        "np.savez(os.environ['EXPAUDIT_OUTPUT'] + '/features.npz', observation_id=ids,\n"
        "         features=np.ones((len(ids), 2)))\n")
    (program / "selector.py").chmod(0o644)
    status, shown = _run(capsys, program, tree, tmp_path / "out")
    assert status == 1 and shown["status"] == "output_invalid" and shown["features"] is None
    assert "/output/features.npz, field 'observation_id': value 'confirm-0'" in shown["reason"], shown
