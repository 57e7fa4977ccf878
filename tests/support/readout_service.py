"""A readout setting for the service tests: the small synthetic bank (`tests.support.readout_bank`)
laid out as a frozen root and a sealed directory, and uploads made from its rows."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from tests.support.readout_bank import write_bank

SETTING = "door-readout-v1"


def readout_root(directory: Path) -> dict:
    """`frozen/readout/door-v1/` and `sealed/door-v1-labels.parquet` under `directory`, with the
    bank's files (`write_bank`): returns them with `frozen` and `sealed_dir`."""
    made = write_bank(Path(directory) / "made")
    frozen = Path(directory) / "frozen"
    (frozen / "readout").mkdir(parents=True)
    shutil.copytree(made["bank"], frozen / "readout" / "door-v1")
    sealed = Path(directory) / "sealed"
    sealed.mkdir()
    shutil.copy(made["sealed"], sealed / "door-v1-labels.parquet")
    return {**made, "frozen": frozen, "sealed_dir": sealed}


def features_npz(ids, values) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, observation_id=np.asarray(ids, dtype=str), features=np.asarray(values))
    return buffer.getvalue()


def predictions_npz(ids, values) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, observation_id=np.asarray(ids, dtype=str), prediction=np.asarray(values))
    return buffer.getvalue()


def parquet_bytes(frame: pd.DataFrame, **kwargs) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, **kwargs)
    return buffer.getvalue()
