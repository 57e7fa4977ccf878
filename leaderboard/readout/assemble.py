"""From a bank and one representation's rows to predictions, per-initialization metrics and
failure-predictor covariates. Pure apart from the tables handed in.

A features representation gets the spec's ridge readout, fitted on the `train` natural
observations; a predictions representation is used as given. Every observation a metric
needs (the natural ones and the admitted controlled cells of the split) must have a row:
a missing one is an error naming the representation's file and the observation id.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from leaderboard.errors import InputError
from leaderboard.readout.bank import GRIPPER_DISTANCE, Bank
from leaderboard.readout.grid import ControlledGrid
from leaderboard.readout.inputs import Representation
from leaderboard.readout.metrics import InitializationMetrics, initialization_metrics
from leaderboard.readout.predictors import Covariates
from leaderboard.readout.ridge import fit_ridge


def _positions(rep: Representation, ids: pd.Series, what: str) -> np.ndarray:
    """Row of each id in the representation; a missing one is an `InputError`."""
    lookup = pd.Index(rep.ids)
    rows = lookup.get_indexer(ids.to_numpy())
    missing = np.flatnonzero(rows < 0)
    if len(missing):
        raise InputError(rep.source, f"has no row for {what} ({len(missing)} missing)", field="observation_id",
                         value=ids.iloc[missing[0]])
    return rows


def predict(bank: Bank, rep: Representation) -> tuple[pd.Series, dict]:
    """(prediction per observation id, the readout's description for the report)."""
    unknown = np.flatnonzero(~pd.Index(rep.ids).isin(bank.observations["observation_id"]))
    if len(unknown):
        raise InputError(rep.source, "is not an observation of the bank", line=int(unknown[0]) + 2,
                         field="observation_id", value=rep.ids[unknown[0]])
    if rep.kind == "predictions":
        return pd.Series(rep.values, index=rep.ids), {"kind": "submitted predictions"}
    labels = bank.labels
    train = labels[(labels["split"] == "train") & (labels["kind"] == "natural")]
    if train.empty:
        raise InputError(bank.source, "has no train natural observation to fit the readout on", field="split")
    rows = _positions(rep, train["observation_id"], "a train natural observation")
    readout = fit_ridge(rep.values[rows], train["coordinate"].to_numpy(dtype=np.float64))
    return pd.Series(readout.predict(rep.values), index=rep.ids), readout.to_dict()


def _split_rows(bank: Bank, split: str) -> pd.DataFrame:
    labels = bank.labels
    return labels[labels["split"] == split]


def split_metrics(bank: Bank, rep: Representation, predictions: pd.Series, split: str) -> list[InitializationMetrics]:
    """Metrics of every initialization of `split`, sorted by initialization id."""
    rows = _split_rows(bank, split)
    natural = rows["kind"] == "natural"
    cells = (rows["kind"] == "controlled") & rows["admitted"]
    used = rows[natural | cells]
    _positions(rep, used["observation_id"], f"a {split} observation")
    p = predictions.reindex(used["observation_id"].to_numpy()).to_numpy(dtype=np.float64)
    used = used.assign(prediction=p)
    out = []
    for initialization, group in sorted(used.groupby("initialization"), key=lambda item: item[0]):
        nat = group[group["kind"] == "natural"]
        ctl = group[group["kind"] == "controlled"]
        grid = ControlledGrid(ctl["context"].to_numpy(dtype=np.int64), ctl["grid_index"].to_numpy(dtype=np.int64),
                              ctl["coordinate"].to_numpy(dtype=np.float64), ctl["prediction"].to_numpy(),
                              grid_size=bank.info.grid_size, n_contexts=bank.info.n_contexts)
        out.append(initialization_metrics(str(initialization), nat["prediction"].to_numpy(),
                                          nat["coordinate"].to_numpy(dtype=np.float64), grid,
                                          min_separation=bank.info.min_separation))
    without = sorted(set(rows["initialization"]) - set(used["initialization"]))
    for initialization in without:  # nothing admitted and no natural frame: every metric says why
        empty = ControlledGrid([], [], [], [], grid_size=bank.info.grid_size, n_contexts=bank.info.n_contexts)
        out.append(initialization_metrics(str(initialization), [], [], empty, min_separation=bank.info.min_separation))
    return sorted(out, key=lambda m: m.initialization)


def curves(bank: Bank, predictions: pd.Series, split: str, initializations: list[str]) -> list[dict]:
    """Prediction against actual coordinate per context, for the named initializations."""
    rows = _split_rows(bank, split)
    cells = rows[(rows["kind"] == "controlled") & rows["admitted"] & rows["initialization"].isin(initializations)]
    out = []
    for initialization in initializations:
        group = cells[cells["initialization"] == initialization]
        contexts = []
        for context, part in group.sort_values(["context", "grid_index"]).groupby("context", sort=True):
            contexts.append({
                "context": int(context),
                "grid_index": [int(g) for g in part["grid_index"]],
                "coordinate": [float(q) for q in part["coordinate"]],
                "prediction": [float(predictions[i]) for i in part["observation_id"]],
            })
        out.append({"initialization": initialization, "contexts": contexts})
    return out


def natural_mae_by_source(bank: Bank, predictions: pd.Series, split: str) -> dict[str, list[float]]:
    """Per-initialization natural MAE of each source of natural observations (the expert, each
    policy) on `split`, for a bank whose natural rows have more than one source; else empty.
    The same readout's errors, split by who moved the robot (readout protocol, amendment 1)."""
    rows = _split_rows(bank, split)
    natural = rows[rows["kind"] == "natural"]
    if "source" not in natural.columns or natural["source"].nunique() < 2:
        return {}
    error = np.abs(predictions.reindex(natural["observation_id"].to_numpy()).to_numpy(dtype=np.float64)
                   - natural["coordinate"].to_numpy(dtype=np.float64))
    per = natural.assign(error=error).groupby(["source", "initialization"])["error"].mean()
    return {str(source): [float(v) for v in group.to_numpy()]
            for source, group in per.groupby(level="source", sort=True)}


def covariates(bank: Bank, predictions: pd.Series, split: str,
               metrics: list[InitializationMetrics]) -> list[Covariates]:
    """Failure-predictor covariates per initialization of `split`.

    The initial natural error, initial coordinate and gripper distance are means over the
    first frame of each of the initialization's natural episodes (the same initial state,
    seen by every source); None where it has no natural frame.
    """
    rows = _split_rows(bank, split)
    natural = rows[rows["kind"] == "natural"]
    keys = [k for k in ("initialization", "source", "episode") if k in natural.columns]
    first = natural[natural["frame"] == natural.groupby(keys)["frame"].transform("min")] if len(natural) else natural
    out = []
    for m in metrics:
        start = first[first["initialization"] == m.initialization]
        if start.empty:
            error = coordinate = distance = None
        else:
            y = start["coordinate"].to_numpy(dtype=np.float64)
            p = predictions.reindex(start["observation_id"].to_numpy()).to_numpy(dtype=np.float64)
            error, coordinate = float(np.mean(np.abs(p - y))), float(np.mean(y))
            distance = (float(start[GRIPPER_DISTANCE].mean()) if GRIPPER_DISTANCE in start else None)
        out.append(Covariates(m.initialization, error, coordinate, distance, m.mae_controlled.value,
                              m.gain.value, m.context_sensitivity.value))
    return out
