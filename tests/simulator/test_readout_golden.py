"""Golden cells of the committed readout banks: stored controlled cells re-rendered now give the
same label, admission verdict, simulator state hash and pixels. A change of behaviour without a
bump of `READOUT_BANK_MECHANISM` (and regenerated banks) fails here."""

from __future__ import annotations

import json

import pytest

from benchmark_data.readout_banks import bank_dir

pytestmark = [pytest.mark.sim, pytest.mark.slow]


@pytest.mark.parametrize("task", ["door", "stack"])
def test_stored_cells_render_again_identically(task):
    from benchmark_data.generation.readout_banks import check_bank, code_version

    assert json.loads((bank_dir(task) / "bank.json").read_text())["code_version"] == code_version()
    assert check_bank(task, n_cells=4) == []
