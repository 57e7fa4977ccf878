"""Recording a task's stream: the experts run draw after draw, and the accepted recordings
become the library's frozen files (read back by the frozen-data readers of the library).

`build_stack_stream` and `write_stack_library` record and write the Stack stream,
`build_door_library` the Door stream; `replay_sources` turns a written library into what
the Replay executor runs (base layouts as the simulator's layouts).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from benchmark_data.library import replay_paths
from benchmark_data.paths import library_dir
from benchmark_data.registry import LIBRARY_IDS, experience_id
from simulator.door_expert import record_door
from simulator.recording import record
from simulator.stack_scenes import StackLayout
from simulator.stack_sim import CONTROL_FREQ

STREAM_LENGTH = {"stack": 60, "door": 10}
"""Accepted recordings per stream: Stack K=50 plus the disjoint K=10-b draw; Door K=3 with spares."""


def build_stack_stream(sim, n_accepted: int = STREAM_LENGTH["stack"]):
    """Record draws until `n_accepted` are accepted; returns (recordings, stream rows)."""
    accepted, rows, index = [], [], 0
    while len(accepted) < n_accepted:
        rec = record(sim, index)
        eid = experience_id("stack", len(accepted)) if rec.accepted else ""
        rows.append({"stream_index": index, "accepted": rec.accepted, "experience_id": eid,
                     "reject_reason": "" if rec.accepted else "fails at home"})
        if rec.accepted:
            accepted.append((eid, rec))
        index += 1
    return accepted, rows


def write_stack_library(accepted, rows, root=None) -> Path:
    """Write stream.parquet, experiences.parquet and demos.hdf5 of the Stack stream."""
    out = library_dir(LIBRARY_IDS["stack"], root)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(out / "stream.parquet", index=False)
    records = []
    for eid, rec in accepted:
        lay = rec.layout
        records.append({
            "experience_id": eid, "stream_index": rec.stream_index, "task": "stack",
            "base_layout": json.dumps(lay.to_dict()), "style": json.dumps(rec.style.to_dict()),
            "cube_a_x": lay.cube_a[0], "cube_a_y": lay.cube_a[1], "cube_a_yaw": lay.cube_a[2],
            "cube_b_x": lay.cube_b[0], "cube_b_y": lay.cube_b[1], "cube_b_yaw": lay.cube_b[2],
            "path_len": len(rec.path), "path": rec.path.reshape(-1).tolist(),
        })
    pd.DataFrame(records).to_parquet(out / "experiences.parquet", index=False, compression="zstd")
    _write_demos(out / "demos.hdf5", accepted)
    return out


def _write_demos(path: Path, accepted) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["env_args"] = json.dumps({
            "env_name": "Stack", "type": 1, "env_kwargs": {
                "robots": ["Panda"], "controller": "OSC_POSE", "control_freq": CONTROL_FREQ,
                "initialization_noise": None, "hard_reset": False,
                "obstacle": "static box, see base_layout"}})
        total = 0
        for n, (eid, rec) in enumerate(accepted):
            g = data.create_group(f"demo_{n}")
            g.attrs["experience_id"] = eid
            g.attrs["num_samples"] = len(rec.actions)
            g.attrs["base_layout"] = json.dumps(rec.layout.to_dict())
            g.attrs["style"] = json.dumps(rec.style.to_dict())
            kw = {"compression": "gzip", "compression_opts": 6}
            g.create_dataset("actions", data=rec.actions.astype(np.float32), **kw)
            g.create_dataset("states", data=rec.states, **kw)
            g.create_dataset("ee_target_path", data=rec.path, **kw)
            obs = g.create_group("obs")
            obs.create_dataset("robot0_eef_pos", data=rec.obs_eef_pos, **kw)
            obs.create_dataset("robot0_eef_quat", data=rec.obs_eef_quat, **kw)
            obs.create_dataset("robot0_gripper_qpos", data=rec.obs_gripper_qpos, **kw)
            obs.create_dataset("object", data=rec.obs_cube_pos, **kw)
            total += len(rec.actions)
        data.attrs["total"] = total


def build_door_library(sim, root=None, n_accepted: int = STREAM_LENGTH["door"]) -> Path:
    """Record the Door stream until `n_accepted` are accepted; write its library files."""
    import h5py

    out = library_dir(LIBRARY_IDS["door"], root)
    out.mkdir(parents=True, exist_ok=True)
    accepted, rows, index = [], [], 0
    while len(accepted) < n_accepted:
        rec = record_door(sim, index)
        eid = experience_id("door", len(accepted)) if rec["accepted"] else ""
        rows.append({"stream_index": index, "accepted": rec["accepted"], "experience_id": eid,
                     "reject_reason": "" if rec["accepted"] else "fails at home"})
        if rec["accepted"]:
            accepted.append((eid, rec))
        index += 1
    pd.DataFrame(rows).to_parquet(out / "stream.parquet", index=False)
    pd.DataFrame([{"experience_id": eid, "stream_index": r["stream_index"], "task": "door",
                   "base_layout": json.dumps(r["layout"].to_dict()), "style": json.dumps(r["style"].to_dict()),
                   "door_x": r["layout"].door[0], "door_y": r["layout"].door[1],
                   "door_yaw": r["layout"].door[2], "hinge": r["layout"].hinge,
                   "path_len": len(r["path"]), "path": r["path"].reshape(-1).tolist()}
                  for eid, r in accepted]).to_parquet(out / "experiences.parquet", index=False,
                                                      compression="zstd")
    kw = {"compression": "gzip", "compression_opts": 6}
    with h5py.File(out / "demos.hdf5", "w") as f:
        data = f.create_group("data")
        data.attrs["env_args"] = json.dumps({"env_name": "Door", "type": 1, "env_kwargs": {
            "robots": ["Panda"], "controller": "OSC_POSE", "control_freq": 20, "use_latch": True,
            "initialization_noise": None, "hard_reset": False}})
        for n, (eid, r) in enumerate(accepted):
            g = data.create_group(f"demo_{n}")
            g.attrs.update(experience_id=eid, num_samples=len(r["actions"]),
                           base_layout=json.dumps(r["layout"].to_dict()),
                           style=json.dumps(r["style"].to_dict()))
            g.create_dataset("actions", data=r["actions"].astype(np.float32), **kw)
            g.create_dataset("states", data=r["states"], **kw)
            g.create_dataset("ee_target_path", data=r["path"], **kw)
            obs = g.create_group("obs")
            for key, name in (("pos", "robot0_eef_pos"), ("quat", "robot0_eef_quat"),
                              ("grip", "robot0_gripper_qpos"), ("door", "object")):
                obs.create_dataset(name, data=r[key], **kw)
        data.attrs["total"] = sum(len(r["actions"]) for _, r in accepted)
    return out


def replay_sources(library_id: str, root=None) -> dict:
    """experience_id -> (base StackLayout, path array (T, 6)) for the Replay executor."""
    return {eid: (StackLayout.from_dict(base), path)
            for eid, (base, path) in replay_paths(library_id, root).items()}
