"""End to end over real HTTP: features of a representation submitted to a running service (gunicorn,
an RQ worker, a real Redis and store) give, to the printed digit, the numbers of
`expaudit readout audit` run offline on the same files and, for a reference representation
of the published banks, the numbers of its row in `reports/reference-confirm.json`.

The published banks' confirm labels are sealed (docs/readout.md, "Files"): the test on them
takes door-v1's from the sealed directory (`EXPAUDIT_READOUT_SEALED`, default
`var/readout_sealed/`) or, where they are not installed, rebuilds them from the committed
images first (a few minutes of rendering). The small synthetic bank's test needs neither.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np
import pytest
import requests

from benchmark_data.readout_banks import bank_dir, sealed_dir, sealed_labels_path
from leaderboard.site.readout_report import render_readout_summary
from tests.support.paths import REPO_ROOT
from tests.support.readout_service import SETTING, readout_root
from tests.support.servers import ServiceStack, bearer, new_token, synthetic_setting, write_catalog

HEADLINE = ("mae_natural", "mae_controlled", "gain", "gain_error", "context_sensitivity", "slope")
REFERENCE = "policy/door-e000"
"""The reference representation submitted on the published Door bank (128 features a row)."""


def _stack(directory: Path, redis_server, frozen: Path, sealed: Path) -> ServiceStack:
    catalog = write_catalog(directory / "catalog", synthetic_setting("toy-k4", k=4))
    stack = ServiceStack(directory, redis_server, catalog, extra_env={
        "EXPAUDIT_FROZEN_ROOT": str(frozen), "EXPAUDIT_READOUT_SEALED": str(sealed),
        "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY": "50"})
    stack.start_web(workers=1)
    stack.start_worker()
    return stack


def _shards_npz(directory: Path) -> bytes:
    """The representation's shards (`features-*.npz`) as one NPZ upload, dtype kept."""
    ids, values = [], []
    for shard in sorted(directory.glob("features-*.npz")):
        with np.load(shard) as z:
            ids.append(z["observation_id"])
            values.append(z["features"])
    buffer = io.BytesIO()
    np.savez(buffer, observation_id=np.concatenate(ids), features=np.concatenate(values))
    return buffer.getvalue()


def _submit_and_wait(stack: ServiceStack, data: bytes, name: str, timeout: float = 300) -> dict:
    token = new_token(stack.url, "lab-readout")
    created = requests.post(f"{stack.url}/api/v1/submissions", headers=bearer(token), timeout=120,
                            files={"file": ("features.npz", data)},
                            data={"setting": SETTING, "name": name, "input": "features"})
    assert created.status_code == 202, created.text
    url = f"{stack.url}{created.json()['status_url']}"
    deadline = time.monotonic() + timeout
    while True:
        status = requests.get(url, headers=bearer(token), timeout=30).json()
        if status["state"] in ("published", "failed"):
            break
        assert time.monotonic() < deadline, f"still {status['state']}\n{stack.logs()}"
        time.sleep(0.5)
    assert status["state"] == "published", f"{status}\n{stack.logs()}"
    report = requests.get(f"{stack.url}{status['report_urls'][SETTING]['json']}", headers=bearer(token), timeout=30)
    assert report.status_code == 200
    return report.json()


def _offline(stack: ServiceStack, bank: Path, sealed: Path, name: str, features: Path, tmp: Path) -> tuple[dict, str]:
    """`expaudit readout audit` on the same files: its JSON report and its printed summary."""
    args = ["readout", "audit", "--bank", str(bank), "--sealed-labels", str(sealed),
            "--features", f"{name}={features}"]
    printed = stack.run_cli(*args, timeout=600)
    assert printed.returncode == 0, printed.stderr
    out = tmp / "offline.json"
    written = stack.run_cli(*args, "--json", str(out), timeout=600)
    assert written.returncode == 0, written.stderr
    return json.loads(out.read_text()), printed.stdout


def _printed(block: dict) -> tuple:
    return tuple("n/a" if block[k] is None else f"{block[k]:.3f}" for k in ("mean", "low", "high"))


def _same_to_the_printed_digit(served: dict, row: dict) -> None:
    for metric in HEADLINE:
        assert _printed(served["summary"][metric]) == _printed(row["summary"][metric]), metric
        assert served["summary"][metric]["n"] == row["summary"][metric]["n"], metric


def _headline_line(report: dict, name: str) -> str:
    lines = render_readout_summary(report).splitlines()
    return next(line for line in lines if line.startswith(f"{name}: "))


def test_features_over_http_give_the_offline_numbers(tmp_path, redis_server):
    files = readout_root(tmp_path / "readout")
    stack = _stack(tmp_path / "svc", redis_server, files["frozen"], files["sealed_dir"])
    try:
        served = _submit_and_wait(stack, _shards_npz(files["weak_shards"]), "weak")
        offline, printed = _offline(stack, files["bank"], files["sealed"], "weak", files["weak_shards"], tmp_path)
    finally:
        stack.stop()
    _same_to_the_printed_digit(served["representations"][0], offline["representations"][0])
    assert _headline_line(served, "weak") in printed.splitlines()
    assert served["inputs"]["n_bootstrap"] == offline["inputs"]["n_bootstrap"] == 2000


@pytest.fixture(scope="module")
def door_sealed(tmp_path_factory) -> Path:
    """A sealed directory holding door-v1's sealed labels: the installed one, else labels rebuilt
    here from the committed images (`expaudit data readout-banks door --rebuild-sealed`: the
    confirm and eval cells rendered again, a few minutes, and checked against bank.json's hash)."""
    if sealed_labels_path("door").is_file():
        return sealed_dir()
    pytest.importorskip("robosuite")
    from benchmark_data.generation.readout_banks import rebuild_sealed_labels

    made = tmp_path_factory.mktemp("door-sealed")
    rebuild_sealed_labels("door", work=made / "work", sealed=made / "sealed")
    return made / "sealed"


@pytest.mark.slow
def test_a_reference_representation_over_http_gives_its_reference_row(tmp_path, redis_server, door_sealed):
    frozen = REPO_ROOT / "benchmark_data" / "frozen"
    features = bank_dir("door", frozen) / "features" / REFERENCE
    reference = json.loads((bank_dir("door", frozen) / "reports" / "reference-confirm.json").read_text())
    row = next(r for r in reference["representations"] if r["name"] == REFERENCE)
    stack = _stack(tmp_path / "svc", redis_server, frozen, door_sealed)
    try:
        served = _submit_and_wait(stack, _shards_npz(features), REFERENCE)
        offline, printed = _offline(stack, bank_dir("door", frozen), sealed_labels_path("door", door_sealed), REFERENCE,
                                    features, tmp_path)
    finally:
        stack.stop()
    rep = served["representations"][0]
    _same_to_the_printed_digit(rep, row)
    _same_to_the_printed_digit(rep, offline["representations"][0])
    line = _headline_line(served, REFERENCE)
    assert line == _headline_line({**reference, "representations": [row]}, REFERENCE)
    assert line in printed.splitlines()
