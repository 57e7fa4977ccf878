"""Bank version 2 of a task (docs/readout_protocol.md, amendments 1-3): version 1's public rows,
the published policies' frames and new sealed splits.

Stages, each resumable and skipped when its output exists:

1. `chunks`: the start check of every new `confirm` and `eval` initialization (the bank gate:
   one failure stops the run), then their chunks (`readout_banks.generate_chunks` with
   `bank="v2"`: expert frames, screened contexts, the grid; opaque ids under version 2's key),
   on version 1's grid.
2. the policies' frames (`readout_policy_frames`, `--bank v2`) and the `eval` outcomes
   (`readout_outcomes --bank v2`) are their own scripts.
3. `assemble`: `frozen/readout/<task>-v2/` with the files of version 1's contract:
   version 1's `train` and `dev` rows as they are, the policies' frames as natural rows with
   their source, the new sealed splits; sealed labels to the sealed directory; `bank.json`
   with the validation record and each source's code version.

    python -m benchmark_data.generation.readout_bank_v2 chunks --task door
    python -m benchmark_data.generation.readout_bank_v2 assemble --task door
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from benchmark_data.generation import readout_banks as gen
from benchmark_data.generation.readout_policy_frames import frames_work_dir, read_units
from benchmark_data.readout_banks import (LABEL_COLUMNS, OBSERVATION_COLUMNS, PUBLIC_SPLITS, SEALED_SPLITS,
                                          TASKS, bank_dir, read_bank, read_labels, read_observations,
                                          sealed_dir, sealed_labels_path)
from expaudit.errors import InvalidInput
from simulator.readout_checks import Target, check_start
from simulator.readout_inits import initializations, make_sim, start

log = logging.getLogger(__name__)

BANK = "v2"
SOURCE_BANK = "v1"
NEW_SPLITS = SEALED_SPLITS
"""Splits version 2 draws afresh (amendment 2); `train` and `dev` are version 1's."""


class StartCheckFailed(InvalidInput):
    """A new initialization failed its start check: the bank gate stops version 2."""


def check_starts(task: str, sim=None, limit: int | None = None) -> dict:
    """The start check of every new sealed initialization (the first `limit` of each split);
    raises `StartCheckFailed` on any failure (the indices are never moved to pass it, amendment 3)."""
    sim = sim if sim is not None else make_sim(task)
    target = Target(sim, task)
    bad, count = {}, 0
    for split in NEW_SPLITS:
        for init in initializations(task, split, BANK)[:limit]:
            start(sim, init)
            check = check_start(sim, task, target)
            count += 1
            if not check.valid:
                bad[init.init_id] = check.reason
    if bad:
        raise StartCheckFailed(f"{task} bank {BANK}: {len(bad)} of {count} new initializations fail the "
                               f"start check: {json.dumps(bad)[:500]}")
    return {"checked": count, "failed": 0}


def make_chunks(task: str, *, root=None, work: Path | None = None, sealed: Path | None = None,
                limit: int | None = None) -> int:
    """The start gate, then every missing chunk of the new sealed splits on version 1's grid
    (`limit`: initializations per split, for small runs)."""
    work = work or gen.work_dir(task, bank=BANK)
    grid_file = work / "grid.json"
    if not grid_file.exists():
        gen._atomic_write(grid_file, json.dumps(read_bank(task, root, SOURCE_BANK)["grid"], indent=1).encode())
    gate = work / "starts.json"
    if not gate.exists():
        gen._atomic_write(gate, json.dumps(check_starts(task, limit=limit)).encode())
    return gen.generate_chunks(task, NEW_SPLITS, work=work, sealed=sealed, limit=limit, bank=BANK)


# ---- assembly -------------------------------------------------------------------------------
def carried_rows(task: str, root=None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Version 1's public rows (labels in their order) and their images (`_image`, -1: none)."""
    labels = read_labels(task, root, bank=SOURCE_BANK)
    obs = read_observations(task, root, SOURCE_BANK).set_index("observation_id")
    labels = labels[labels["split"].isin(PUBLIC_SPLITS)].reset_index(drop=True)
    agent, wrist, image = [], [], np.full(len(labels), -1)
    shard_of = obs.loc[labels["observation_id"], "shard"].to_numpy()
    row_of = obs.loc[labels["observation_id"], "row"].to_numpy()
    for shard in sorted(set(shard_of) - {""}):
        take = np.flatnonzero(shard_of == shard)
        with np.load(bank_dir(task, root, SOURCE_BANK) / shard) as z:
            agent.append(z["agentview"][row_of[take].astype(int)])
            wrist.append(z["wrist"][row_of[take].astype(int)])
        image[take] = sum(len(a) for a in agent[:-1]) + np.arange(len(take))
    return labels.assign(_image=image), np.concatenate(agent), np.concatenate(wrist)


def policy_rows(task: str, key: bytes, work: Path | None = None,
                levels: dict[str, int] | None = None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, dict]:
    """The policies' frames as natural label rows (`_image` into the returned views), sorted by
    split, initialization, source and frame; and each source's code version."""
    frames, agent, wrist = read_units(work or frames_work_dir(task))
    wanted = {init.init_id: init for split in ("train", "dev", "confirm")
              for init in initializations(task, split, BANK)}
    stray = sorted(set(frames["initialization"]) - set(wanted))
    if stray:
        raise InvalidInput(f"{task}: policy frames of initializations outside bank {BANK}: {stray[:3]}")
    versions = dict(zip(frames["source"], frames["code_version"]))
    rows = []
    for r in frames.itertuples(index=False):
        row = {"kind": "natural", "source": r.source, "frame": int(r.frame)}
        init = wanted[r.initialization]
        rows.append({c: None for c in LABEL_COLUMNS} | {
            "observation_id": gen.observation_id(task, r.split, r.initialization, row,
                                                 key if r.split in SEALED_SPLITS else None),
            "coordinate": float(r.coordinate), "kind": "natural", "initialization": r.initialization,
            "split": r.split, "source": r.source, "episode": int(r.episode), "frame": int(r.frame),
            "gripper_distance": float(r.gripper_distance), "layout_level": init.layout_level,
            "state_hash": r.state_hash, "reject_reason": "", "_image": int(r.image)})
    table = pd.DataFrame(rows, columns=LABEL_COLUMNS + ["_image"])
    for column in ("target", "drift", "max_object_speed", "max_joint_speed", "penetration_mm"):
        table[column] = table[column].astype(float)
    order = {"train": 0, "dev": 1, "confirm": 2}
    table = table.assign(_s=table["split"].map(order)).sort_values(
        ["_s", "initialization", "source", "frame"], kind="stable").drop(columns="_s")
    return table.reset_index(drop=True), agent, wrist, versions


def new_rows(task: str, work: Path | None = None,
             limit: int | None = None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, list[dict]]:
    """The new sealed splits' chunk rows (`_image` into the returned views) and repeat checks."""
    work = work or gen.work_dir(task, bank=BANK)
    parts, agent, wrist, repeats, offset = [], [], [], [], 0
    for split in NEW_SPLITS:
        chunks = gen.n_chunks(split, limit)
        gen.check_chunk_versions(work, split, chunks)
        for c in range(chunks):
            table, images = gen.chunk_paths(work, split, c)
            if not table.exists():
                raise InvalidInput(f"{task} bank {BANK}: chunk {table.name} is not made yet (run `chunks`)")
            frame = pd.read_parquet(table)
            with np.load(images) as z:
                where = {oid: i for i, oid in enumerate(z["observation_id"]) if oid}
                agent.append(z["agentview"])
                wrist.append(z["wrist"])
            frame["_image"] = [where[o] + offset if o in where else -1 for o in frame["observation_id"]]
            offset += len(agent[-1])
            parts.append(frame)
            repeats += json.loads((work / f"{split}-{c:02d}.repeats.json").read_text())
    return pd.concat(parts, ignore_index=True), np.concatenate(agent), np.concatenate(wrist), repeats


def assemble(task: str, *, root=None, work: Path | None = None, frames_work: Path | None = None,
             out: Path | None = None, sealed: Path | None = None, limit: int | None = None) -> dict:
    """Write version 2's bank files (module docstring); returns its bank.json."""
    out = out or bank_dir(task, root, BANK)
    sealed = sealed or sealed_dir()
    key = gen.id_key(sealed, BANK)
    old, old_a, old_w = carried_rows(task, root)
    pol, pol_a, pol_w, versions = policy_rows(task, key, frames_work)
    new, new_a, new_w, repeats = new_rows(task, work, limit)
    agent = np.concatenate([old_a, pol_a, new_a])
    wrist = np.concatenate([old_w, pol_w, new_w])
    pol["_image"] = np.where(pol["_image"] >= 0, pol["_image"] + len(old_a), -1)
    new["_image"] = np.where(new["_image"] >= 0, new["_image"] + len(old_a) + len(pol_a), -1)
    parts = [gen._typed(part[LABEL_COLUMNS + ["_image"]]).assign(_part=k) for k, part in enumerate((old, pol, new))]
    for part in parts[1:]:  # the carried rows' dtypes, so no part's all-missing column changes them
        for column, dtype in parts[0].dtypes.items():
            part[column] = part[column].astype(dtype)
    rows = pd.concat(parts, ignore_index=True)
    if rows["observation_id"].duplicated().any():
        raise InvalidInput(f"{task} bank {BANK}: repeated observation ids, e.g. "
                           f"{rows.loc[rows['observation_id'].duplicated(), 'observation_id'].iloc[0]}")
    out.mkdir(parents=True, exist_ok=True)
    observations, labels, shards = [], {}, {}
    for split in gen.SPLITS:
        frame = rows[rows["split"] == split]
        frame = frame.sort_values("_part", kind="stable").drop(columns="_part")  # version 1's rows first
        has = frame["_image"] >= 0
        where = dict(zip(frame.loc[has, "observation_id"], frame.loc[has, "_image"]))
        frame = gen._order(frame.drop(columns="_image"), split, where, agent, wrist)
        has = frame["observation_id"].isin(where)
        order = [int(where[o]) for o in frame.loc[has, "observation_id"]]
        positions = np.flatnonzero(has.to_numpy())
        frame["shard"], frame["row"] = "", -1
        for s, first in enumerate(range(0, len(order), gen.SHARD_ROWS)):
            name = f"images-{split}-{s:02d}.npz"
            take = order[first:first + gen.SHARD_ROWS]
            ids = frame.loc[positions[first:first + gen.SHARD_ROWS], "observation_id"].to_numpy().astype(str)
            gen._atomic_write(out / name, gen._npz_bytes(observation_id=ids, agentview=agent[take],
                                                         wrist=wrist[take]))
            frame.loc[positions[first:first + gen.SHARD_ROWS], "shard"] = name
            frame.loc[positions[first:first + gen.SHARD_ROWS], "row"] = np.arange(len(take))
            shards[name] = (out / name).stat().st_size
        frame = frame.assign(task=task)
        observations.append(frame[OBSERVATION_COLUMNS])
        labels[split] = frame[LABEL_COLUMNS].reset_index(drop=True)
    gen._atomic_write(out / "observations.parquet",
                      gen._parquet_bytes(pd.concat(observations, ignore_index=True)))
    gen._atomic_write(out / "labels.parquet",
                      gen._parquet_bytes(pd.concat([labels[s] for s in PUBLIC_SPLITS], ignore_index=True)))
    data = gen._parquet_bytes(pd.concat([labels[s] for s in SEALED_SPLITS], ignore_index=True))
    gen._atomic_write(sealed_labels_path(task, sealed, BANK), data)
    for stale in out.glob("images-*.npz"):
        if stale.name not in shards:
            stale.unlink()
    grid = read_bank(task, root, SOURCE_BANK)["grid"]
    bank = gen._bank_json(task, list(gen.SPLITS), grid, labels, repeats, shards,
                          hashlib.sha256(data).hexdigest())
    bank["version"] = BANK
    bank["seeds"]["first_index"] = {s: initializations(task, s, BANK)[0].index for s in gen.SPLITS}
    bank["carried_from"] = {"bank": f"{task}-{SOURCE_BANK}", "splits": list(PUBLIC_SPLITS),
                            "rows": int(len(old))}
    natural = pd.concat(labels.values())
    natural = natural[natural["kind"] == "natural"]
    bank["natural_sources"] = {
        source: {"rows": int((natural["source"] == source).sum()),
                 "code_version": versions.get(source, gen.code_version())}
        for source in sorted(set(natural["source"]))}
    bank["validation"]["policy_frames"] = {
        split: {"rollouts": int(pol[pol["split"] == split].groupby(["initialization", "source"]).ngroups),
                "frames": int((pol["split"] == split).sum())} for split in ("train", "dev", "confirm")}
    gen._atomic_write(out / "bank.json", (json.dumps(bank, indent=1, sort_keys=True) + "\n").encode())
    return bank


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark_data.generation.readout_bank_v2",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("chunks", "assemble"))
    parser.add_argument("--task", choices=TASKS, action="append", help="repeatable; default both")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for task in args.task or TASKS:
        if args.stage == "chunks":
            log.info("%s: %d chunks made", task, make_chunks(task))
        else:
            bank = assemble(task)
            log.info("%s: %s", task, json.dumps(bank["validation"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
