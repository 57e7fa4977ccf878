"""`expaudit-client submit` on a running service (gunicorn, a real Redis and store): a scores
file is checked here first, but a readout setting's features or predictions file is the
server's to check, with or without `--input`; the server's answer then names the problem."""

from __future__ import annotations

import pytest

from expaudit_client.cli import main
from tests.support.readout_service import SETTING, features_npz, readout_root
from tests.support.servers import ServiceStack, new_token, synthetic_setting, write_catalog

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_server):
    directory = tmp_path_factory.mktemp("client-readout")
    files = readout_root(directory / "readout")
    catalog = write_catalog(directory / "catalog", synthetic_setting("toy-k4", k=4))
    stack = ServiceStack(directory, redis_server, catalog, extra_env={
        "EXPAUDIT_FROZEN_ROOT": str(files["frozen"]),
        "EXPAUDIT_READOUT_SEALED": str(files["sealed_dir"])})
    stack.start_web(workers=1)
    yield stack
    stack.stop()


@pytest.mark.parametrize("kind", [None, "features"])
def test_a_readout_file_goes_to_the_server_a_scores_setting_refuses_it_here(stack, kind,
                                                                            tmp_path, capsys):
    token = new_token(stack.url, f"client-readout-{kind}")
    upload = tmp_path / "features.npz"
    upload.write_bytes(features_npz(["not-an-observation"], [[1.0, 2.0]]))
    flags = ["--server", stack.url, "--token", token] + (["--input", kind] if kind else [])

    assert main(["submit", str(upload), "--setting", SETTING, *flags]) == 1
    answered = capsys.readouterr().err
    assert answered.startswith("expaudit-client submit: error: HTTP 422"), answered

    assert main(["submit", str(upload), "--setting", "toy-k4", "--server", stack.url,
                 "--token", token]) == 2
    refused = capsys.readouterr().err
    assert "cannot tell the format" in refused and "HTTP" not in refused, refused
