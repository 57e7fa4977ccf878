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
    python -m benchmark_data.generation.readout_bank_v2 rebuild-sealed --task door

`rebuild-sealed` makes lost sealed labels again from fresh renders, checked by their sha256.
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
from benchmark_data.generation.readout_policy_frames import frames_work_dir, read_units, run_frames
from benchmark_data.generation.readout_sealed import match_rows, problem_text
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
        gen.atomic_write(grid_file, json.dumps(read_bank(task, root, SOURCE_BANK)["grid"], indent=1).encode())
    gate = work / "starts.json"
    if not gate.exists():
        gen.atomic_write(gate, json.dumps(check_starts(task, limit=limit)).encode())
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


BLIND_ID = r".*-i\d{3}-x\d{2}$"
"""The ids `pixel_blind_ids` gives (`door-confirm-i024-x03`)."""


def pixel_blind_ids(rows: pd.DataFrame, agent: np.ndarray, wrist: np.ndarray) -> pd.DataFrame:
    """Sealed rows that pixels cannot single out renamed `<initialization>-xNN`, NN their rank in
    (kind, source, frame, context, grid index) order: rows without an image (rejected cells) and
    rows whose two views equal another row's of the same initialization (every source's first
    frame shows the same start). Lost sealed labels are rebuilt by matching pixels
    (`rebuild_sealed`); these rows have none of their own, so their ids follow from the physics
    alone. The names say only that a row has no image or shares its images, which its images show."""
    rows = rows.copy()
    sealed = rows["split"].isin(SEALED_SPLITS).to_numpy()
    pictured = rows["_image"].to_numpy() >= 0
    digest = np.full(len(rows), "", dtype=object)
    for i in np.flatnonzero(sealed & pictured):
        k = int(rows["_image"].iat[i])
        digest[i] = hashlib.sha256(agent[k].tobytes() + wrist[k].tobytes()).hexdigest()
    shared = pd.Series(list(zip(rows["initialization"], digest))).duplicated(keep=False).to_numpy() & pictured
    blind = sealed & (~pictured | shared)
    ranked = rows[blind].assign(_src=rows.loc[blind, "source"].fillna("").astype(str)).sort_values(
        ["initialization", "kind", "_src", "frame", "context", "grid_index"], kind="stable", na_position="first")
    rank = ranked.groupby("initialization").cumcount()
    rows.loc[ranked.index, "observation_id"] = [f"{i}-x{int(k):02d}" for i, k in zip(ranked["initialization"], rank)]
    return rows


def joined_rows(*parts) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """(rows, agent views, wrist views) of (rows, agent, wrist) parts, `_image` re-indexed and
    `_part` the part's position; every part takes the first part's dtypes, so no part's
    all-missing column changes them (the sealed labels' bytes depend on it)."""
    frames, offset = [], 0
    for k, (rows, agent, _) in enumerate(parts):
        rows = gen.typed_labels(rows[LABEL_COLUMNS + ["_image"]]).assign(_part=k)
        rows["_image"] = np.where(rows["_image"] >= 0, rows["_image"] + offset, -1)
        offset += len(agent)
        frames.append(rows)
    for frame in frames[1:]:
        for column, dtype in frames[0].dtypes.items():
            frame[column] = frame[column].astype(dtype)
    return (pd.concat(frames, ignore_index=True), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]))


def assemble(task: str, *, root=None, work: Path | None = None, frames_work: Path | None = None,
             out: Path | None = None, sealed: Path | None = None, limit: int | None = None) -> dict:
    """Write version 2's bank files (module docstring); returns its bank.json."""
    out = out or bank_dir(task, root, BANK)
    sealed = sealed or sealed_dir()
    key = gen.id_key(sealed, BANK)
    old, old_a, old_w = carried_rows(task, root)
    pol, pol_a, pol_w, versions = policy_rows(task, key, frames_work)
    new, new_a, new_w, repeats = new_rows(task, work, limit)
    rows, agent, wrist = joined_rows((old, old_a, old_w), (pol, pol_a, pol_w), (new, new_a, new_w))
    rows = pixel_blind_ids(rows, agent, wrist)
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
        frame = gen.split_order(frame.drop(columns="_image"), split, where, agent, wrist)
        has = frame["observation_id"].isin(where)
        order = [int(where[o]) for o in frame.loc[has, "observation_id"]]
        positions = np.flatnonzero(has.to_numpy())
        frame["shard"], frame["row"] = "", -1
        for s, first in enumerate(range(0, len(order), gen.SHARD_ROWS)):
            name = f"images-{split}-{s:02d}.npz"
            take = order[first:first + gen.SHARD_ROWS]
            ids = frame.loc[positions[first:first + gen.SHARD_ROWS], "observation_id"].to_numpy().astype(str)
            gen.atomic_write(out / name, gen.npz_bytes(observation_id=ids, agentview=agent[take],
                                                         wrist=wrist[take]))
            frame.loc[positions[first:first + gen.SHARD_ROWS], "shard"] = name
            frame.loc[positions[first:first + gen.SHARD_ROWS], "row"] = np.arange(len(take))
            shards[name] = (out / name).stat().st_size
        frame = frame.assign(task=task)
        observations.append(frame[OBSERVATION_COLUMNS])
        labels[split] = frame[LABEL_COLUMNS].reset_index(drop=True)
    gen.atomic_write(out / "observations.parquet",
                      gen.parquet_bytes(pd.concat(observations, ignore_index=True)))
    gen.atomic_write(out / "labels.parquet",
                      gen.parquet_bytes(pd.concat([labels[s] for s in PUBLIC_SPLITS], ignore_index=True)))
    data = gen.parquet_bytes(pd.concat([labels[s] for s in SEALED_SPLITS], ignore_index=True))
    gen.atomic_write(sealed_labels_path(task, sealed, BANK), data)
    for stale in out.glob("images-*.npz"):
        if stale.name not in shards:
            stale.unlink()
    grid = read_bank(task, root, SOURCE_BANK)["grid"]
    bank = gen.bank_json(task, list(gen.SPLITS), grid, labels, repeats, shards,
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
    gen.atomic_write(out / "bank.json", (json.dumps(bank, indent=1, sort_keys=True) + "\n").encode())
    return bank


# ---- rebuilding lost sealed labels -----------------------------------------------------------
def rebuild_sealed(task: str, *, root=None, work: Path | None = None, sealed: Path | None = None,
                   limit: int | None = None, rollouts: int | None = None, horizon: int | None = None) -> dict:
    """Rebuild version 2's sealed labels from fresh renders when they (and the id key) are lost.

    Makes the new sealed splits' chunks and the policies' `confirm` rollouts again in
    `<work>/sealed-rebuild` (resumable), gives the committed rows with images the label of the
    one regenerated row whose two views agree with theirs (`readout_sealed.match_rows`) and the
    other rows the regenerated row of the same id (`pixel_blind_ids`), and installs the
    file only when its sha256 is `bank.json`'s `sealed_labels_sha256`. The policies' rollouts
    read rendered images, so this needs a CPU that renders the bank's frames bit for bit; and a
    fresh process can differ from the generating one in the last bits of a trajectory, which the
    hash check refuses (docs/readout.md, "Version 2's sealed labels": exact at small scale, not at
    full scale today).
    `limit`, `rollouts` and `horizon` are those of a small bank's generation (tests).
    """
    bank = read_bank(task, root, BANK)
    expected = bank["sealed_labels_sha256"]
    target = sealed_labels_path(task, sealed, BANK)
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return {"task": task, "installed": target.name, "already": True}
    work = work or gen.work_dir(task, bank=BANK) / gen.REBUILD_DIR
    make_chunks(task, root=root, work=work, sealed=work, limit=limit)  # a throwaway key in `work`
    run_frames(task, splits=("confirm",), work=work / "frames", bank=BANK, limit=rollouts, horizon=horizon)
    key = gen.id_key(work, BANK)
    old, old_a, old_w = carried_rows(task, root)
    pol, pol_a, pol_w, _ = policy_rows(task, key, work / "frames")
    new, new_a, new_w, _ = new_rows(task, work, limit)
    rows, agent, wrist = joined_rows((old, old_a, old_w), (pol, pol_a, pol_w), (new, new_a, new_w))
    rows = pixel_blind_ids(rows, agent, wrist)
    regen = rows[rows["split"].isin(SEALED_SPLITS)].rename(columns={"_image": "image"}).reset_index(drop=True)
    named = regen["observation_id"].str.match(BLIND_ID)
    committed, (c_agent, c_wrist) = gen.committed_sealed(task, root, BANK)
    pictured = (committed["image"] >= 0) & ~committed["observation_id"].str.match(BLIND_ID)
    matching = match_rows(committed[pictured], (c_agent, c_wrist), regen[~named], (agent, wrist))
    seen = regen.index[~named].to_numpy()
    blind_ids = dict(zip(regen.loc[named, "observation_id"], regen.index[named]))
    positions = np.full(len(committed), -1, dtype=np.int64)
    positions[pictured.to_numpy()] = [seen[k] if k >= 0 else -1 for k in matching.positions]
    for i in np.flatnonzero(~pictured.to_numpy()):
        positions[i] = blind_ids.get(committed.at[i, "observation_id"], -1)
    problems = list(matching.problems) + [
        f"{committed.at[i, 'observation_id']}: no regenerated row without images has this id"
        for i in np.flatnonzero(~pictured.to_numpy()) if positions[i] < 0]
    if problems:
        raise InvalidInput(f"sealed labels of {task} bank {BANK} not rebuilt: {int((positions >= 0).sum())} of "
                           f"{len(committed)} observations matched; {problem_text(problems)}")
    labels = regen.loc[positions].reset_index(drop=True)
    labels["observation_id"] = committed["observation_id"].to_numpy()
    ordered = [labels[committed["split"].to_numpy() == split][LABEL_COLUMNS].reset_index(drop=True)
               for split in SEALED_SPLITS]
    data = gen.parquet_bytes(pd.concat(ordered, ignore_index=True))
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise InvalidInput(f"rebuilt sealed labels of {task} bank {BANK}: sha256 {got} differs from "
                           f"bank.json's sealed_labels_sha256 {expected}; nothing installed")
    gen.atomic_write(target, data)
    return {"task": task, "installed": target.name, "already": False, "rows": len(labels)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark_data.generation.readout_bank_v2",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("chunks", "assemble", "rebuild-sealed"))
    parser.add_argument("--task", choices=TASKS, action="append", help="repeatable; default both")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for task in args.task or TASKS:
        if args.stage == "chunks":
            log.info("%s: %d chunks made", task, make_chunks(task))
        elif args.stage == "rebuild-sealed":
            log.info("%s: %s", task, json.dumps(rebuild_sealed(task)))
        else:
            bank = assemble(task)
            log.info("%s: %s", task, json.dumps(bank["validation"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
