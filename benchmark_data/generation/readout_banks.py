"""Generation of the readout banks: resumable, per task, split and chunk of initializations.

Three stages, each skipped when its output exists (so a rerun resumes):

1. `grid`: the expert's trajectories from every `train` initialization, without images;
   the grid's set values are `simulator.readout_protocol.grid_values` of their coordinates.
   Written to the work directory as `grid.json`.
2. chunks: `CHUNK` initializations at a time (`simulator.readout_bank`), written to the
   work directory as `<split>-<chunk>.parquet` (rows with labels) and `.npz` (images), each
   through a temporary file and an atomic rename, so a killed run never leaves a torn file
   that a later stage would read.
3. `assemble`: the bank files of the contract (docs/readout.md, "Files"; docs/readout_protocol.md): `observations.parquet`
   (public), `labels.parquet` (train and dev), the sealed labels of confirm and eval in the
   sealed directory, image shards per split, `bank.json` with the sealed labels' sha256 and
   the validation record.

`confirm` and `eval` observation ids are opaque: HMAC-SHA256 of the cell's description under
a key kept in the sealed directory (made once, never committed). Their labels are
regenerated deterministically from the same key; without the key the images still identify
the cells where renders are bit-identical to the bank's, so the mapping can be rebuilt by
matching pixels (`rebuild_sealed_labels`), except for an initialization with more than one
rejected cell: those rows have no images.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import os
import re
import secrets
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmark_data.generation.readout_sealed import match_rows, problem_text
from benchmark_data.readout_banks import (BANK_VERSION, BANKS, LABEL_COLUMNS, OBSERVATION_COLUMNS, PUBLIC_SPLITS,
                                          SEALED_SPLITS, bank_dir, read_bank, read_images, read_labels,
                                          read_observations, sealed_dir, sealed_labels_path)
from expaudit.errors import InvalidInput
from simulator.provenance import PACKAGES, _versions
from simulator.readout_bank import observe_initialization
from simulator.readout_cells import Observer, expert_commands
from simulator.readout_checks import Target
from simulator.readout_inits import SPLITS, initialization, initializations, make_sim, split_indices
from simulator.readout_protocol import (GRID_PERCENTILES, GRID_SIZE, MIN_ENDPOINT_SEPARATION, N_CONTEXTS,
                                        NATURAL_EVERY, READOUT_BANK_MECHANISM, THRESHOLDS, grid_values,
                                        reject_reason, renders_agree)

log = logging.getLogger(__name__)

CHUNK = 8
"""Initializations per work chunk: the unit a killed run loses at most."""
SHARD_ROWS = 1200
"""Observations per image shard (about 8 MB compressed at ~6.7 KB per agent+wrist pair)."""
UNITS = {"door": "deg", "stack": "mm"}
COORDINATES = {"door": "door hinge angle", "stack": "cube A world x"}
KEY_NAME = "readout-id-key"


def code_version() -> str:
    """Declared mechanism version of a bank's observations: `readout-bank/<N>`."""
    return f"readout-bank/{READOUT_BANK_MECHANISM}"


def work_dir(task: str, root: str | Path | None = None, bank: str = BANK_VERSION) -> Path:
    """Where chunks and the grid of a bank are made (gitignored `var/`, holds sealed labels)."""
    base = Path(root) if root is not None else Path(os.environ.get(
        "EXPAUDIT_READOUT_WORK", Path(__file__).resolve().parents[2] / "var" / "readout_work"))
    return base / f"{task}-{bank}"


def atomic_write(path: Path, data: bytes) -> None:
    """Write through a temporary file and a rename, so a killed run leaves no torn file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


INT_COLUMNS = ("episode", "frame", "context", "grid_index", "context_step", "visible_px")
BOOL_COLUMNS = ("admitted", "contact", "visible", "context_screened")


def typed_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """Nullable integer and boolean columns (natural rows have no cell checks), '' reasons."""
    frame = frame.copy()
    for col in INT_COLUMNS:
        frame[col] = frame[col].astype("Int64")
    for col in BOOL_COLUMNS:
        frame[col] = frame[col].astype("boolean")
    frame["reject_reason"] = frame["reject_reason"].fillna("").astype(str)
    frame["source"] = frame["source"].astype("string")
    return frame


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """A table's Parquet bytes (no index): what a bank's tables and the sealed labels hold."""
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def npz_bytes(**arrays) -> bytes:
    """Compressed NPZ bytes of `arrays` (image shards, chunks' images)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def key_name(bank: str = BANK_VERSION) -> str:
    """The id key's file name: version 1's `readout-id-key`; later versions draw their own key
    (docs/readout_protocol.md, amendment 2), `readout-id-key-<bank>`."""
    return KEY_NAME if bank == "v1" else f"{KEY_NAME}-{bank}"


def id_key(sealed: Path, bank: str = BANK_VERSION) -> bytes:
    """The key of the opaque ids (made on first use, kept in the sealed directory)."""
    path = sealed / key_name(bank)
    if not path.exists():
        atomic_write(path, secrets.token_hex(32).encode())
    return bytes.fromhex(path.read_text().strip())


def observation_id(task: str, split: str, init_id: str, row: dict, key: bytes | None) -> str:
    """Readable for public splits (`door-train-i007-n012`, `-c2g5`; a policy's frame names the
    policy: `door-train-i007-policy-door-e000-n012`), opaque for sealed ones."""
    if row["kind"] == "natural":
        local = f"n{int(row['frame']):03d}"
        source = row.get("source") or "expert"
        if source != "expert":
            local = f"{source.replace('/', '-')}-{local}"
    else:
        local = f"c{int(row['context'])}g{int(row['grid_index'])}"
    if split in PUBLIC_SPLITS:
        return f"{init_id}-{local}"
    digest = hmac.new(key, f"{init_id}|{local}".encode(), hashlib.sha256).hexdigest()[:20]
    return f"{task}-{split}-{digest}"


# ---- stage 1: the grid -------------------------------------------------------------------
def train_grid(task: str, sim=None, work: Path | None = None) -> dict:
    """The grid of `task` from its train natural coordinates (cached in `grid.json`)."""
    path = (work or work_dir(task)) / "grid.json"
    if path.exists():
        return json.loads(path.read_text())
    sim = sim or make_sim(task)
    target = Target(sim, task)
    coords = []
    for init in initializations(task, "train"):
        sim.restore(init.layout)
        for row in expert_commands(sim, task, init):
            coords.append(target.coordinate())
            sim.step(*row)
        coords.append(target.coordinate())
    coords = np.asarray(coords)
    grid = {"values": [float(v) for v in grid_values(task, coords)],
            "percentiles": list(GRID_PERCENTILES), "train_natural_steps": int(coords.size),
            "natural_percentiles": {str(p): round(float(np.percentile(coords, p)), 4)
                                    for p in (5, 10, 25, 50, 75, 90, 95)}}
    atomic_write(path, json.dumps(grid, indent=1).encode())
    return grid


# ---- stage 2: chunks -------------------------------------------------------------------
def chunk_paths(work: Path, split: str, chunk: int) -> tuple[Path, Path]:
    return work / f"{split}-{chunk:02d}.parquet", work / f"{split}-{chunk:02d}.npz"


def chunk_version_path(work: Path, split: str, chunk: int) -> Path:
    """The mechanism version (`code_version()`) a chunk's rows were made under."""
    return work / f"{split}-{chunk:02d}.version"


def check_chunk_versions(work: Path, split: str, chunks: int) -> None:
    """Refuse to assemble a split whose chunks were not all made under this mechanism version:
    a bank records one `code_version` for all its rows (docs/readout_protocol.md, "Provenance"),
    so it may hold no row of another."""
    for chunk in range(chunks):
        path = chunk_version_path(work, split, chunk)
        found = path.read_text().strip() if path.is_file() else None
        if found != code_version():
            raise InvalidInput(f"chunk {split}-{chunk:02d}: made under mechanism "
                               f"{found or 'unrecorded'}, this code is {code_version()}: remove the chunk "
                               "to make it again")


def n_chunks(split: str, limit: int | None = None) -> int:
    """Chunks of `split` (of `limit` initializations when given)."""
    n = SPLITS[split] if limit is None else min(limit, SPLITS[split])
    return (n + CHUNK - 1) // CHUNK


def run_chunk(observer, task: str, split: str, chunk: int, grid: np.ndarray, key: bytes | None,
              limit: int | None = None,
              bank: str = BANK_VERSION) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, list[dict]]:
    """Observe the initializations of one chunk: its rows (ids, labels, `_image`: index into the
    images or -1), agent views, wrist views and repeated-state checks."""
    n = SPLITS[split] if limit is None else min(limit, SPLITS[split])
    rows, agent, wrist, repeats = [], [], [], []
    indices = split_indices(split, bank)
    for position in range(chunk * CHUNK, min((chunk + 1) * CHUNK, n)):
        init = initialization(task, split, indices[position])
        t0 = time.perf_counter()
        obs = observe_initialization(observer, init, grid)
        wall = time.perf_counter() - t0
        for r, k in zip(obs.rows, obs.image_of_row):
            r = dict(r, task=task, split=split, initialization=init.init_id,
                     layout_level=init.layout_level, init_wall_s=round(wall, 3),
                     observation_id=observation_id(task, split, init.init_id, r, key))
            r["_image"] = -1 if k < 0 else len(agent) + k
            rows.append(r)
        agent.extend(obs.agentview)
        wrist.extend(obs.wrist)
        repeats.append({"initialization": init.init_id, **obs.repeat,
                        "contexts_screened": obs.contexts_screened})
    return pd.DataFrame(rows), np.stack(agent), np.stack(wrist), repeats


def generate_chunks(task: str, splits, *, work: Path | None = None, sealed: Path | None = None,
                    limit: int | None = None, bank: str = BANK_VERSION) -> int:
    """Run every missing chunk of `splits` of bank version `bank`; returns how many were made."""
    work = work or work_dir(task, bank=bank)
    sealed = sealed or sealed_dir()
    sim = make_sim(task)
    grid = np.asarray(train_grid(task, sim, work)["values"])
    observer = Observer(sim, task)
    made = 0
    try:
        for split in splits:
            key = id_key(sealed, bank) if split in SEALED_SPLITS else None
            for chunk in range(n_chunks(split, limit)):
                table_path, image_path = chunk_paths(work, split, chunk)
                if table_path.exists() and image_path.exists():
                    continue
                t0 = time.perf_counter()
                frame, agent, wrist, repeats = run_chunk(observer, task, split, chunk, grid, key, limit, bank)
                with_image = frame["_image"].to_numpy()
                ids = np.where(with_image >= 0, frame["observation_id"].to_numpy(), "")
                image_ids = np.empty(len(agent), dtype=object)
                image_ids[with_image[with_image >= 0]] = ids[with_image >= 0]
                atomic_write(image_path, npz_bytes(observation_id=image_ids.astype(str),
                                                     agentview=agent, wrist=wrist))
                frame = typed_labels(frame.drop(columns="_image"))
                atomic_write(work / f"{split}-{chunk:02d}.repeats.json", json.dumps(repeats).encode())
                atomic_write(chunk_version_path(work, split, chunk), code_version().encode())
                atomic_write(table_path, parquet_bytes(frame))
                made += 1
                log.info("%s %s chunk %d: %d rows in %.1f s", task, split, chunk, len(frame),
                         time.perf_counter() - t0)
    finally:
        observer.close()
    return made


# ---- stage 3: assemble -------------------------------------------------------------------
def _complete_splits(work: Path, limit: int | None) -> list[str]:
    done = []
    for split in SPLITS:
        if all(all(p.exists() for p in chunk_paths(work, split, c)) for c in range(n_chunks(split, limit))):
            done.append(split)
    return done


def split_order(frame: pd.DataFrame, split: str, where: dict, agent: np.ndarray, wrist: np.ndarray) -> pd.DataFrame:
    """Public splits in generation order. Sealed splits in an order computed from the images
    only (per initialization, by the wrist view's then the agent view's mean pixel, then the
    opaque id), so a row's position reveals nothing the images do not, while similar images
    stay next to each other and compress well."""
    if split in PUBLIC_SPLITS:
        return frame.reset_index(drop=True)
    k = frame["observation_id"].map(where)
    has = k.notna().to_numpy()
    idx = k.fillna(0).astype(int).to_numpy()
    frame = frame.assign(_has=~has,
                         _w=np.where(has, wrist[idx].reshape(len(idx), -1).mean(axis=1), 0.0),
                         _a=np.where(has, agent[idx].reshape(len(idx), -1).mean(axis=1), 0.0))
    frame = frame.sort_values(["initialization", "_has", "_w", "_a", "observation_id"], kind="stable")
    return frame.drop(columns=["_has", "_w", "_a"]).reset_index(drop=True)


def assemble(task: str, *, work: Path | None = None, out: Path | None = None,
             sealed: Path | None = None, limit: int | None = None) -> dict:
    """Write the bank files of every split whose chunks are all made; returns bank.json."""
    work = work or work_dir(task)
    out = out or bank_dir(task)
    sealed = sealed or sealed_dir()
    out.mkdir(parents=True, exist_ok=True)
    splits = _complete_splits(work, limit)
    grid = json.loads((work / "grid.json").read_text())
    observations, labels, repeats, shards = [], {}, [], {}
    for split in splits:
        check_chunk_versions(work, split, n_chunks(split, limit))
    for split in splits:
        parts = [pd.read_parquet(chunk_paths(work, split, c)[0]) for c in range(n_chunks(split, limit))]
        images = [np.load(chunk_paths(work, split, c)[1]) for c in range(n_chunks(split, limit))]
        for c in range(n_chunks(split, limit)):
            repeats += json.loads((work / f"{split}-{c:02d}.repeats.json").read_text())
        ids = np.concatenate([z["observation_id"] for z in images])
        agent = np.concatenate([z["agentview"] for z in images])
        wrist = np.concatenate([z["wrist"] for z in images])
        where = {oid: i for i, oid in enumerate(ids)}
        frame = split_order(pd.concat(parts, ignore_index=True), split, where, agent, wrist)
        has = frame["observation_id"].isin(where)
        order = [where[o] for o in frame.loc[has, "observation_id"]]
        frame["shard"], frame["row"] = "", -1
        positions = np.flatnonzero(has.to_numpy())
        for s, start in enumerate(range(0, len(order), SHARD_ROWS)):
            name = f"images-{split}-{s:02d}.npz"
            take = order[start:start + SHARD_ROWS]
            atomic_write(out / name, npz_bytes(observation_id=ids[take], agentview=agent[take],
                                                 wrist=wrist[take]))
            frame.loc[positions[start:start + SHARD_ROWS], "shard"] = name
            frame.loc[positions[start:start + SHARD_ROWS], "row"] = np.arange(len(take))
            shards[name] = (out / name).stat().st_size
        observations.append(frame[OBSERVATION_COLUMNS])
        labels[split] = frame[LABEL_COLUMNS]
    atomic_write(out / "observations.parquet", parquet_bytes(pd.concat(observations, ignore_index=True)))
    public = [labels[s] for s in splits if s in PUBLIC_SPLITS]
    if public:
        atomic_write(out / "labels.parquet", parquet_bytes(pd.concat(public, ignore_index=True)))
    sealed_sha = None
    closed = [labels[s] for s in splits if s in SEALED_SPLITS]
    if closed:
        data = parquet_bytes(pd.concat(closed, ignore_index=True))
        atomic_write(sealed_labels_path(task, sealed), data)
        sealed_sha = hashlib.sha256(data).hexdigest()
    for stale in out.glob("images-*.npz"):  # shards of a previous, larger assembly
        if stale.name not in shards:
            stale.unlink()
    bank = bank_json(task, splits, grid, labels, repeats, shards, sealed_sha)
    atomic_write(out / "bank.json", (json.dumps(bank, indent=1, sort_keys=True) + "\n").encode())
    return bank


def _validation(frames: dict[str, pd.DataFrame], repeats: list[dict]) -> dict:
    record = {}
    for split, frame in frames.items():
        cells = frame[frame["kind"] == "controlled"]
        reasons: dict[str, int] = {}
        for text in cells.loc[~cells["admitted"].astype(bool), "reject_reason"]:
            if not text:
                continue
            for part in text.split("; "):
                key = re.sub(r"\s+[\d.].*$", "", part).removesuffix(" in")
                key = {"target visible": "target not visible"}.get(key, key)
                reasons[key] = reasons.get(key, 0) + 1
        admitted = cells["admitted"].astype(bool)
        per_init = cells.assign(a=admitted).groupby("initialization")["a"].sum()
        record[split] = {"initializations": int(frame["initialization"].nunique()),
                         "natural": int((frame["kind"] == "natural").sum()),
                         "cells": int(len(cells)), "admitted": int(admitted.sum()),
                         "rejected_by_check": dict(sorted(reasons.items())),
                         "admitted_per_initialization_min": int(per_init.min()),
                         "initializations_all_24_admitted": int((per_init == 24).sum())}
    rep = [r for r in repeats if r["cells"]]
    record["repeated_state"] = {
        "cells": len(rep), "label_equal": sum(r["label_equal"] for r in rep),
        "hash_equal": sum(r["hash_equal"] for r in rep), "pixels_equal": sum(r["pixels_equal"] for r in rep)}
    record["contexts_screened_per_initialization"] = {
        str(k): sum(r["contexts_screened"] == k for r in repeats) for k in range(N_CONTEXTS + 1)}
    return record


def bank_json(task, splits, grid, labels, repeats, shards, sealed_sha) -> dict:
    """A bank's `bank.json`: its facts, grid, thresholds, counts, versions and validation record."""
    hashes = hashlib.sha256()
    for split in splits:
        for h in labels[split]["state_hash"]:
            hashes.update(str(h).encode())
    return {
        "task": task, "version": BANK_VERSION, "coordinate": COORDINATES[task], "unit": UNITS[task],
        "grid": grid, "grid_size": GRID_SIZE, "contexts": N_CONTEXTS,
        "thresholds": THRESHOLDS[task].to_dict(),
        "min_endpoint_separation": MIN_ENDPOINT_SEPARATION[task],
        "natural_every_steps": NATURAL_EVERY[task], "splits": splits,
        "initializations": {s: SPLITS[s] for s in splits},
        "seeds": {"namespace": "simulator.readout_inits.READOUT_SEED",
                  "rule": "SeedSequence([READOUT_SEED, task, split, index, 0])"},
        "counts": {s: int(len(labels[s])) for s in splits},
        "code_version": code_version(), "packages": json.loads(_versions(PACKAGES)),
        "state_hashes_sha256": hashes.hexdigest(),
        "sealed_labels_sha256": sealed_sha,
        "shards": shards,
        "validation": _validation(labels, repeats),
    }


def generate(task: str, splits=None, *, limit: int | None = None, work: Path | None = None,
             out: Path | None = None, sealed: Path | None = None) -> dict:
    """Make every missing chunk of `splits` (default: all) and assemble the bank."""
    splits = list(splits or SPLITS)
    unknown = [s for s in splits if s not in SPLITS]
    if unknown:
        raise InvalidInput(f"splits must be among {', '.join(SPLITS)}, got {', '.join(unknown)}")
    if limit is not None:  # a small run never mixes with the bank's own chunks and files
        work = work or work_dir(task) / f"limit-{limit}"
        out = out or work / "bank"
        sealed = sealed or work / "sealed"
        grid_file = work_dir(task) / "grid.json"
        if not (work / "grid.json").exists() and grid_file.exists():
            atomic_write(work / "grid.json", grid_file.read_bytes())
    generate_chunks(task, splits, work=work, sealed=sealed, limit=limit)
    return assemble(task, work=work, out=out, sealed=sealed, limit=limit)


# ---- rebuilding lost sealed labels ---------------------------------------------------------
REBUILD_DIR = "sealed-rebuild"
"""Subdirectory of the work directory where `rebuild_sealed_labels` renders the sealed splits."""


def committed_sealed(task: str, root, bank: str = BANK_VERSION) -> tuple[pd.DataFrame, tuple[np.ndarray, np.ndarray]]:
    """Sealed rows of a published bank's `observations.parquet` in their order, `image` indexing
    the views (what a rebuild of lost sealed labels matches fresh renders against)."""
    obs = read_observations(task, root, bank)
    obs = obs[obs["split"].isin(SEALED_SPLITS)].reset_index(drop=True)
    obs["image"] = -1
    agent, wrist = [], []
    for shard, rows in obs[obs["shard"] != ""].groupby("shard", sort=False):
        with np.load(bank_dir(task, root, bank) / shard) as z:
            agent.append(z["agentview"][rows["row"].to_numpy()])
            wrist.append(z["wrist"][rows["row"].to_numpy()])
        obs.loc[rows.index, "image"] = sum(len(a) for a in agent[:-1]) + np.arange(len(rows))
    return obs, (np.concatenate(agent), np.concatenate(wrist))


def _regenerated(work: Path, split: str,
                 limit: int | None) -> tuple[pd.DataFrame, tuple[np.ndarray, np.ndarray]]:
    """A split's regenerated rows in generation order, `image` indexing the chunks' views."""
    chunks = range(n_chunks(split, limit))
    frame = pd.concat([pd.read_parquet(chunk_paths(work, split, c)[0]) for c in chunks], ignore_index=True)
    ids, agent, wrist = [], [], []
    for c in chunks:
        with np.load(chunk_paths(work, split, c)[1]) as z:
            ids.append(z["observation_id"])
            agent.append(z["agentview"])
            wrist.append(z["wrist"])
    where = {oid: i for i, oid in enumerate(np.concatenate(ids))}
    frame["image"] = frame["observation_id"].map(where).fillna(-1).astype(int)
    return frame, (np.concatenate(agent), np.concatenate(wrist))


def rebuild_sealed_labels(task: str, *, root: str | Path | None = None, work: Path | None = None,
                          sealed: Path | None = None, limit: int | None = None) -> dict:
    """Rebuild the sealed labels of a committed bank without its id key and install them.

    Renders `confirm` and `eval` again (the generation's chunks, resumable, in
    `<work dir>/sealed-rebuild`), matches every committed sealed observation to its cell by
    both views' pixels (`readout_sealed.match_rows`), writes the labels in the committed row
    order and installs the file at `sealed_labels_path` only if its sha256 is bank.json's
    `sealed_labels_sha256`; any difference is an error and the sealed path is left as it was.
    `limit` is the generation's (initializations per split, for a bank made with it).
    """
    bank = read_bank(task, root)
    splits = [s for s in bank.get("splits", []) if s in SEALED_SPLITS]
    expected = bank.get("sealed_labels_sha256")
    if not expected or not splits:
        raise InvalidInput(f"bank.json of {task!r}: sealed_labels_sha256 or a sealed split is missing")
    target = sealed_labels_path(task, sealed)
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return {"task": task, "installed": str(target), "sha256": expected, "already": True}
    work = work or work_dir(task) / REBUILD_DIR
    if not (work / "grid.json").exists():  # the bank's own grid, not one recomputed from train
        atomic_write(work / "grid.json", json.dumps(bank["grid"], indent=1).encode())
    t0 = time.perf_counter()
    # The regenerated ids use a throwaway key in the work directory; the committed ids are kept.
    generate_chunks(task, splits, work=work, sealed=work, limit=limit)
    render_s = time.perf_counter() - t0
    committed, views = committed_sealed(task, root)
    frames, matchings = [], {}
    for split in splits:
        mine = committed[committed["split"] == split]
        regen, regen_views = _regenerated(work, split, limit)
        matchings[split] = match_rows(mine, views, regen, regen_views)
        labels = regen.iloc[np.maximum(matchings[split].positions, 0)].reset_index(drop=True)
        labels["observation_id"] = mine["observation_id"].to_numpy()
        frames.append(labels[LABEL_COLUMNS])
    bad = [(s, m) for s, m in matchings.items() if m.problems]
    if bad:  # every split's count, then what differs in the first split that differs
        counts = ", ".join(f"{s} {m.matched} of {len(m.positions)}" for s, m in matchings.items())
        raise InvalidInput(f"sealed labels of {task!r} not rebuilt: observations matched: "
                           f"{counts}; {bad[0][0]}: {problem_text(bad[0][1].problems)}")
    data = parquet_bytes(pd.concat(frames, ignore_index=True))
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise InvalidInput(f"rebuilt sealed labels of {task!r}: sha256 {got} differs from bank.json's "
                           f"sealed_labels_sha256 {expected}; nothing installed")
    atomic_write(target, data)
    return {"task": task, "installed": str(target), "sha256": got, "already": False,
            "rows": int(sum(len(f) for f in frames)), "render_s": round(render_s, 1),
            "match_s": round(time.perf_counter() - t0 - render_s, 1)}


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("door", "stack"))
    parser.add_argument("--splits", default=",".join(SPLITS))
    parser.add_argument("--limit", type=int, default=None, help="initializations per split (small runs)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    bank = generate(args.task, args.splits.split(","), limit=args.limit)
    log.info("%s", json.dumps(bank["validation"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def check_bank(task: str, n_cells: int = 4, root: str | Path | None = None) -> list[str]:
    """Re-render `n_cells` stored controlled cells of the committed bank (spread over its public
    rows, admitted ones and one rejected) and compare label, admission, state hash and pixels;
    returns the mismatches (empty when the bank reproduces)."""
    labels = read_labels(task, root)
    cells = labels[labels["kind"] == "controlled"]
    admitted = cells[cells["admitted"].astype(bool)]
    picks = admitted.iloc[np.linspace(0, len(admitted) - 1, max(n_cells - 1, 1)).astype(int)]
    rejected = cells[~cells["admitted"].astype(bool)]
    if len(rejected):
        picks = pd.concat([picks, rejected.iloc[[len(rejected) // 2]]])
    observer = Observer(make_sim(task), task)
    problems = []
    try:
        for _, row in picks.iterrows():
            _, split, index = row["initialization"].rsplit("-", 2)
            init = initialization(task, split, int(index.removeprefix("i")))
            frames = [f for f, _ in observer.natural(init, 10**6)]
            measure, images = observer.controlled(init, float(row["target"]), frames[int(row["context_step"])])
            oid = row["observation_id"]
            if measure.coordinate != row["coordinate"]:
                problems.append(f"{oid}: coordinate {measure.coordinate!r} != stored {row['coordinate']!r}")
            if measure.state_hash != row["state_hash"]:
                problems.append(f"{oid}: state hash differs")
            reason = reject_reason_of(task, measure)
            if reason != row["reject_reason"]:
                problems.append(f"{oid}: admission {reason!r} != stored {row['reject_reason']!r}")
            if row["admitted"]:
                stored = read_images(task, [oid], root)
                if not (renders_agree(stored["agentview"][0], images[0])
                        and renders_agree(stored["wrist"][0], images[1])):
                    problems.append(f"{oid}: pixels differ beyond the rasterizer's rounding")
    finally:
        observer.close()
    return problems


def reject_reason_of(task: str, measure) -> str:
    """The admission verdict of a measured cell (`simulator.readout_protocol.reject_reason`)."""
    return reject_reason(task, drift=measure.drift, max_object_speed=measure.max_object_speed,
                         max_joint_speed=measure.max_joint_speed, contact=measure.contact,
                         penetration_mm=measure.penetration_mm, visible_px=measure.visible_px)
