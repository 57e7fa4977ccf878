"""`expaudit submit` on a readout setting against a running service (gunicorn, an RQ worker and
redis-server) on the small synthetic bank: `--input predictions` sends predictions, and
`--wait` prints the headline numbers (the lines `expaudit readout audit` prints) and the
report's URL instead of a retrieval verdict."""

from __future__ import annotations

import pytest

from tests.support.readout_service import SETTING, predictions_npz, readout_root
from tests.support.servers import ServiceStack, new_token, synthetic_setting, write_catalog

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return readout_root(tmp_path_factory.mktemp("readout"))


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server, files):
    directory = tmp_path_factory.mktemp("svc")
    catalog = write_catalog(directory / "catalog", synthetic_setting("toy-k4", k=4))
    stack = ServiceStack(directory, redis_server, catalog, extra_env={
        "EXPAUDIT_FROZEN_ROOT": str(files["frozen"]), "EXPAUDIT_READOUT_SEALED": str(files["sealed_dir"]),
        "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY": "20"})
    stack.start_web(workers=1)
    stack.start_worker()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def token(stack):
    return new_token(stack.url, "readout-cli", timeout=30)


def _submit(stack, token, *argv: str):
    done = stack.run_cli("submit", *argv, "--setting", SETTING, "--wait", "--server", stack.url,
                         "--token", token, timeout=240)
    return done.returncode, done.stdout, done.stderr


def test_wait_prints_the_offline_commands_headline_numbers_and_the_report_url(stack, token, files):
    status, out, err = _submit(stack, token, str(files["weak"]), "--name", "weak")
    assert status == 0, err + out
    offline = stack.run_cli("readout", "audit", "--bank", str(files["bank"]), "--sealed-labels",
                            str(files["sealed"]), "--features", f"weak={files['weak']}", timeout=240)
    assert offline.returncode == 0, offline.stderr
    headline = next(line for line in offline.stdout.splitlines() if line.startswith("weak: "))
    lines = out.splitlines()
    assert f"{SETTING}: {headline}" in lines, out
    tests = [line for line in offline.stdout.splitlines() if line.startswith("  ")]
    assert tests and all(line in lines for line in tests), out
    report = next(line for line in lines if line.startswith("  report: "))
    assert report.endswith(f"/report?setting={SETTING}&format=html"), report
    assert "no verdict" not in out and "A = n/a" not in out


def test_input_predictions_sends_predictions(stack, token, files, tmp_path):
    labels = files["labels"]
    confirm = labels[labels["split"] == "confirm"]
    path = tmp_path / "perfect.npz"
    path.write_bytes(predictions_npz(confirm["observation_id"], confirm["coordinate"].fillna(0.0).to_numpy()))
    status, out, err = _submit(stack, token, str(path), "--input", "predictions")
    assert status == 0, err + out
    assert f"{SETTING}: perfect: natural MAE 0.000 deg, controlled MAE 0.000 deg, gain 1.000, " \
           "gain error 0.000" in out, out
    refused, _out, err = _submit(stack, token, str(path))  # read as features: no features array
    assert refused == 1 and err.startswith("expaudit submit: error: HTTP 422"), err
    assert "is not an array of a features upload" in err and "prediction" in err, err
