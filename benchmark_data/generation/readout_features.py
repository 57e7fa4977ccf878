"""Features of the readout audit's reference representations on a task's observation bank.

READOUT_SPEC's reference rows: each published image policy's frozen encoders
(agent view, centre-cropped as its episodes read it, and eye-in-hand,
concatenated: 2 x feature_dim), MobileNetV2 and EfficientNet-Lite0 pooled
features of the agent view, and the agent view as raw 32x32 pixels. A
representation whose weights this machine lacks is written as "not computed"
with the reason, never replaced by other weights.

Output, per (task, representation), `readout/<task>-<bank>/features/<representation>/` (a policy's
representation is named by its id `<mechanism>/<experience id>`, so its folder is nested):
one `features-XX.npz` per bank image shard `images-XX.npz` (arrays
`observation_id` and `features`, same rows in the same order; float16 for the
1280-d and 3072-d representations, whose files would otherwise pass the
15 MB bound, float32 for the policies' 128-d ones) and `features.json`
(representation, content hash, the sha256 of the weights file it was computed with,
code version, each shard's input and output sha256). A rerun skips a shard whose record matches its input image shard and
the encoder's weights hash and code version, so a killed run resumes.
`read_features` returns one representation's rows from every shard.

`weights_sha256` is the sha256 of the weights file itself: the ImageNet encoders' `.pth` (for
them `content_hash` is that same digest), a policy's `weights.pt` (its `content_hash` also covers
its spec.json and this code version), null for raw32, which has no weights. `--record-weights`
adds it to a `features.json` written before the field existed, only after checking that the
weights on this machine give the record's `content_hash`; no vector is recomputed.

    python -m benchmark_data.generation.readout_features --task door [--representation raw32]
    python -m benchmark_data.generation.readout_features --bank v2 --cache DIR --reuse v1
    python -m benchmark_data.generation.readout_features --record-weights
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmark_data.policy_files import is_trained, policy_dir, policy_experiences
from benchmark_data.readout_banks import BANK_VERSION, BANKS, TASKS, bank_dir
from expaudit.errors import DataNotFound, InvalidInput
from leaderboard.rules.embeddings.base import WEIGHTS_MISSING, NotComputed, file_sha256

CODE_VERSION = "readout-features/1"
"""Declared version of how features are computed here (preprocessing, batching, dtypes); bumped
by any change of the vectors, after which every stored shard is recomputed."""

BATCH = 32
"""Images per forward pass; every pass is padded to exactly this many images, so a vector never
depends on the other images of its shard (CPU convolution kernels depend on the batch size)."""
IMAGE_GLOB = "images-*.npz"
FEATURES_JSON = "features.json"
NOT_COMPUTED = "not computed"
COMPUTED = "computed"
TORCH_REPRESENTATIONS = ("mobilenet_v2", "efficientnet_lite0")
REPRESENTATION_DTYPES = {"mobilenet_v2": "float16", "efficientnet_lite0": "float16", "raw32": "float16"}
"""Stored dtype per weight-free or ImageNet representation (policy ones: float32). raw32's
values are integers 0-255, exact in float16; the CNNs' pooled features keep about three
significant digits, far finer than what a standardised ridge readout resolves."""


class FeaturesNotComputed(DataNotFound, FileNotFoundError):
    """A representation's features were not computed here; the message is the reason."""


@dataclass(frozen=True)
class Representation:
    """A frozen function from a bank row (agent view, wrist view) to one feature vector."""

    name: str
    content_hash: str
    dtype: str
    views: str
    embed: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (agent (N,64,64,3), wrist) -> (N, D)
    weights_sha256: str | None = None
    """sha256 of the weights file the vectors come from; None for a weight-free representation."""


def features_dir(task: str, representation: str, root: str | Path | None = None,
                 bank: str = BANK_VERSION) -> Path:
    return bank_dir(task, root, bank) / "features" / representation


def policy_representations(task: str) -> tuple[str, ...]:
    """`<mechanism>/<experience id>` (the policy's id, as under `policies/`) of every published
    image policy of `task`, in registry order."""
    return tuple(f"{mechanism}/{eid}" for t, mechanism, eid in policy_experiences() if t == task)


def representation_names(task: str) -> tuple[str, ...]:
    """Every reference representation of `task`, in table order."""
    return policy_representations(task) + TORCH_REPRESENTATIONS + ("raw32",)


def _padded_batches(n: int) -> list[tuple[int, int]]:
    return [(start, min(start + BATCH, n)) for start in range(0, n, BATCH)]


def _pad(images: np.ndarray) -> np.ndarray:
    if len(images) == BATCH:
        return images
    pad = np.zeros((BATCH - len(images),) + images.shape[1:], dtype=images.dtype)
    return np.concatenate([images, pad])


def _policy_representation(task: str, name: str, root: str | Path | None) -> Representation | NotComputed:
    """Both frozen encoders of one published two-camera policy, as its episodes apply them."""
    mechanism, eid = name.split("/", 1)
    if not is_trained(mechanism, eid, root):
        return NotComputed(name, f"{WEIGHTS_MISSING}: policies/{mechanism}/{eid} is not in the "
                                 f"frozen data (needs weights.pt, spec.json, training.json)")
    import torch

    from simulator.policy_recipe import CAMERAS, RecipePolicy, centre_crop

    directory = policy_dir(mechanism, eid, root)
    policy = RecipePolicy.load(directory)
    crop = policy.spec.crop_size
    digest = hashlib.sha256(CODE_VERSION.encode())
    for part in ("spec.json", "weights.pt"):
        digest.update(f"\n{part} {file_sha256(directory / part)}".encode())

    def embed(agent: np.ndarray, wrist: np.ndarray) -> np.ndarray:
        views = {"agentview": centre_crop(agent, crop) if crop else agent, "eye_in_hand": wrist}
        rows = []
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # float sums must not depend on the thread count
        try:
            with torch.inference_mode():
                for start, stop in _padded_batches(len(agent)):
                    parts = []
                    for camera in CAMERAS:
                        batch = _pad(np.ascontiguousarray(views[camera][start:stop]))
                        tensor = torch.from_numpy(batch).permute(0, 3, 1, 2).float() / 255.0
                        parts.append(policy.encoders[camera](tensor)[:stop - start].numpy())
                    rows.append(np.concatenate(parts, axis=1))
        finally:
            torch.set_num_threads(threads)
        return np.concatenate(rows).astype(np.float32)

    return Representation(name, "sha256:" + digest.hexdigest(), "float32",
                          "agentview (centre crop) + eye_in_hand", embed,
                          weights_sha256=file_sha256(directory / "weights.pt"))


def _agent_view_representation(name: str, environ: dict | None) -> Representation | NotComputed:
    """An image encoder of the retrieval track's registry applied to the agent view only."""
    from leaderboard.rules.embeddings.registry import load_encoder

    encoder = load_encoder(name, environ=environ)
    if isinstance(encoder, NotComputed):
        return encoder

    def embed(agent: np.ndarray, wrist: np.ndarray) -> np.ndarray:
        rows = [encoder.embed(list(_pad(agent[start:stop])))[:stop - start]
                for start, stop in _padded_batches(len(agent))]
        return np.concatenate(rows)

    # the ImageNet encoders' content hash is their weights file's sha256 (torch_encoders)
    weights = encoder.content_hash if name in TORCH_REPRESENTATIONS else None
    return Representation(name, encoder.content_hash, REPRESENTATION_DTYPES[name], "agentview", embed,
                          weights_sha256=weights)


def load_representation(task: str, name: str, *, root: str | Path | None = None,
                        environ: dict | None = None) -> Representation | NotComputed:
    """The representation `name` of `task`, ready to embed, or why it is not computed here.

    `environ` (default `os.environ`) is where the ImageNet encoders' weight-path variables
    are read (`leaderboard.rules.embeddings.registry.WEIGHTS_ENV`).
    """
    names = representation_names(task)
    if name not in names:
        raise InvalidInput(f"representation must be one of {names}, got {name!r}")
    if name in policy_representations(task):
        return _policy_representation(task, name, root)
    return _agent_view_representation(name, dict(os.environ) if environ is None else environ)


# ---- files -------------------------------------------------------------------------------
def _read_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def _write_json(path: Path, record: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def _packages() -> dict:
    out = {}
    for name in ("torch", "pillow", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def image_shards(bank: Path) -> list[Path]:
    """The bank's image shards, in name order."""
    return sorted(bank.glob(IMAGE_GLOB))


def _load_shard(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        for key in ("observation_id", "agentview", "wrist"):
            if key not in data.files:
                raise InvalidInput(f"{path.name}: image shard lacks the array {key!r}")
        ids, agent, wrist = data["observation_id"], data["agentview"], data["wrist"]
    if agent.dtype != np.uint8 or agent.ndim != 4 or agent.shape[-1] != 3 or agent.shape != wrist.shape \
            or len(ids) != len(agent):
        raise InvalidInput(f"{path.name}: agentview {agent.shape} {agent.dtype} and wrist {wrist.shape} "
                           f"must be (N, H, W, 3) uint8 with one observation_id per row")
    return ids.astype(str), agent, wrist


def write_features(task: str, name: str, *, root: str | Path | None = None,
                   environ: dict | None = None, cache: str | Path | None = None, bank: str = BANK_VERSION,
                   log: Callable[[str], None] = lambda line: None) -> dict:
    """Compute (or resume) one representation's features on `task`'s bank; returns `features.json`.

    A representation that cannot run here gets a record with `status` "not computed" and the
    reason, and no shards. With `cache` (a `precompute` directory), rows whose observation id
    and image digest were precomputed by the same encoder are taken from it, not recomputed.
    """
    directory = bank_dir(task, root, bank)
    shards = image_shards(directory)
    if not shards:
        raise FeaturesNotComputed(f"{directory}: no image shards ({IMAGE_GLOB}): build the bank first")
    out = features_dir(task, name, root, bank)
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / FEATURES_JSON
    representation = load_representation(task, name, root=root, environ=environ)
    if isinstance(representation, NotComputed):
        record = {"representation": name, "task": task, "bank": f"{task}-{bank}",
                  "status": NOT_COMPUTED, "reason": representation.reason, "code_version": CODE_VERSION}
        _write_json(meta_path, record)
        log(f"{task} {name}: {NOT_COMPUTED}: {representation.reason}")
        return record
    old = _read_json(meta_path)
    same_encoder = (old.get("content_hash") == representation.content_hash
                    and old.get("code_version") == CODE_VERSION)
    done = {s["features"]: s for s in old.get("shards", [])} if same_encoder else {}
    record = {"representation": name, "task": task, "bank": f"{task}-{bank}", "status": COMPUTED,
              "content_hash": representation.content_hash, "weights_sha256": representation.weights_sha256,
              "code_version": CODE_VERSION, "dtype": representation.dtype, "views": representation.views,
              "generator": "benchmark_data.generation.readout_features", "packages": _packages(),
              "shards": []}
    for shard in shards:
        target = out / shard.name.replace("images-", "features-")
        images_sha = file_sha256(shard)
        previous = done.get(target.name)
        if previous and previous["images_sha256"] == images_sha and target.is_file() \
                and file_sha256(target) == previous["features_sha256"]:
            record["shards"].append(previous)
            continue
        ids, agent, wrist = _load_shard(shard)
        vectors = _embed_with_cache(representation, ids, agent, wrist, cache)
        tmp = target.with_name(target.name + ".tmp.npz")
        np.savez_compressed(tmp, observation_id=ids, features=vectors)
        tmp.replace(target)
        record["shards"].append({"images": shard.name, "images_sha256": images_sha, "features": target.name,
                                 "features_sha256": file_sha256(target), "rows": int(len(ids)),
                                 "dimension": int(vectors.shape[1])})
        record["dimension"] = int(vectors.shape[1])
        _write_json(meta_path, {**record, "complete": False})
        log(f"{task} {name}: {target.name} ({len(ids)} rows)")
    if record["shards"]:
        record["dimension"] = record["shards"][0]["dimension"]
    record["complete"] = True
    record["rows"] = sum(s["rows"] for s in record["shards"])
    _write_json(meta_path, record)
    return record


def record_weights(task: str, name: str, *, root: str | Path | None = None,
                   environ: dict | None = None) -> dict:
    """Add `weights_sha256` to a computed representation's `features.json` (written before the
    field existed) and return the record. Refused unless the weights here give the record's
    `content_hash`, i.e. they are the weights its vectors were computed with."""
    meta_path = features_dir(task, name, root) / FEATURES_JSON
    record = _read_json(meta_path)
    if record.get("status") != COMPUTED:
        raise FeaturesNotComputed(f"{task} {name}: features.json records no computed features")
    representation = load_representation(task, name, root=root, environ=environ)
    if isinstance(representation, NotComputed):
        raise FeaturesNotComputed(f"{task} {name}: {representation.reason}")
    if representation.content_hash != record.get("content_hash"):
        raise InvalidInput(f"{task} {name}: content_hash of the weights here "
                           f"({representation.content_hash}) differs from features.json's "
                           f"({record.get('content_hash')})")
    record["weights_sha256"] = representation.weights_sha256
    _write_json(meta_path, record)
    return record


# ---- precomputing on the bank generator's work chunks --------------------------------------
def row_digests(agent: np.ndarray, wrist: np.ndarray) -> np.ndarray:
    """16 hex digits of sha256 over each row's agent and wrist pixels: what a cached vector is of."""
    return np.array([hashlib.sha256(a.tobytes() + w.tobytes()).hexdigest()[:16]
                     for a, w in zip(agent, wrist)])


def _cache_dir(cache: str | Path, representation: Representation) -> Path:
    return Path(cache) / representation.name / representation.content_hash.removeprefix("sha256:")[:16]


def _embed_with_cache(representation: Representation, ids: np.ndarray, agent: np.ndarray, wrist: np.ndarray,
                      cache: str | Path | None) -> np.ndarray:
    """The shard's vectors, cached rows (same id, same pixels, same encoder) taken from `cache`.

    Exact: a vector depends on its own image only (`BATCH` padding), so a cached row equals a
    recomputed one bit for bit.
    """
    dtype = np.dtype(representation.dtype)
    found: dict[tuple[str, str], np.ndarray] = {}
    if cache is not None and _cache_dir(cache, representation).is_dir():
        for part in sorted(_cache_dir(cache, representation).glob("*.npz")):
            with np.load(part, allow_pickle=False) as data:
                found.update(zip(zip(data["observation_id"].astype(str), data["digest"].astype(str)),
                                 data["features"]))
    if not found:
        return representation.embed(agent, wrist).astype(dtype)
    keys = list(zip(ids, row_digests(agent, wrist)))
    todo = [i for i, key in enumerate(keys) if key not in found]
    fresh = representation.embed(agent[todo], wrist[todo]).astype(dtype) if todo else None
    rows = [found.get(key) for key in keys]
    for j, i in enumerate(todo):
        rows[i] = fresh[j]
    return np.stack(rows).astype(dtype)


def precompute(task: str, name: str, sources: Sequence[Path], cache: str | Path, *,
               root: str | Path | None = None, environ: dict | None = None,
               log: Callable[[str], None] = lambda line: None) -> int:
    """Embed image files of the bank's layout (`observation_id`, `agentview`, `wrist`) into
    `cache`, one file per source, skipping sources already there; returns how many ran.

    Lets the slow representations run on the bank generator's chunks before the bank is
    assembled; `write_features(..., cache=...)` then reads them instead of recomputing.
    """
    representation = load_representation(task, name, root=root, environ=environ)
    if isinstance(representation, NotComputed):
        raise FeaturesNotComputed(f"{name}: {NOT_COMPUTED}: {representation.reason}")
    out = _cache_dir(cache, representation)
    out.mkdir(parents=True, exist_ok=True)
    ran = 0
    for source in sources:
        target = out / f"{Path(source).stem}-{file_sha256(Path(source)).removeprefix('sha256:')[:16]}.npz"
        if target.is_file():
            continue
        ids, agent, wrist = _load_shard(Path(source))
        vectors = representation.embed(agent, wrist).astype(representation.dtype)
        tmp = target.with_name(target.name + ".tmp.npz")
        np.savez(tmp, observation_id=ids, digest=row_digests(agent, wrist), features=vectors)
        tmp.replace(target)
        ran += 1
        log(f"{task} {name}: cached {Path(source).name} ({len(ids)} rows)")
    return ran


def reuse_bank(task: str, name: str, source: str, cache: str | Path, *, root: str | Path | None = None,
               environ: dict | None = None) -> int:
    """Put bank `source`'s stored vectors of one representation into `cache` (keyed by observation
    id and image digest), when they were computed by the same encoder and code version; returns
    how many rows. A later bank's rows with the same id and pixels then take them unchanged
    (exact: a vector depends on its own image only)."""
    record = _read_json(features_dir(task, name, root, source) / FEATURES_JSON)
    representation = load_representation(task, name, root=root, environ=environ)
    if isinstance(representation, NotComputed) or record.get("status") != COMPUTED \
            or record.get("content_hash") != representation.content_hash or record.get("code_version") != CODE_VERSION:
        return 0
    out = _cache_dir(cache, representation)
    out.mkdir(parents=True, exist_ok=True)
    rows = 0
    for shard in record["shards"]:
        target = out / f"{source}-{shard['features'].removesuffix('.npz')}-{shard['features_sha256'][-16:]}.npz"
        ids, agent, wrist = _load_shard(bank_dir(task, root, source) / shard["images"])
        with np.load(features_dir(task, name, root, source) / shard["features"], allow_pickle=False) as data:
            if not np.array_equal(data["observation_id"].astype(str), ids):
                raise InvalidInput(f"{shard['features']}: rows differ from {shard['images']}")
            vectors = data["features"]
        rows += len(ids)
        if target.is_file():
            continue
        tmp = target.with_name(target.name + ".tmp.npz")
        np.savez(tmp, observation_id=ids, digest=row_digests(agent, wrist), features=vectors)
        tmp.replace(target)
    return rows


def read_features(task: str, name: str, root: str | Path | None = None,
                  bank: str = BANK_VERSION) -> tuple[np.ndarray, np.ndarray]:
    """(observation ids (N,), features (N, D) float32) of one representation, every shard in order.

    Raises `FeaturesNotComputed` with the stored reason when the representation was not
    computed, or when its features are incomplete.
    """
    out = features_dir(task, name, root, bank)
    record = _read_json(out / FEATURES_JSON)
    if not record:
        raise FeaturesNotComputed(f"{out}: no {FEATURES_JSON}: features of {name!r} not generated")
    if record["status"] != COMPUTED:
        raise FeaturesNotComputed(f"{name}: {NOT_COMPUTED}: {record['reason']}")
    if not record.get("complete"):
        raise FeaturesNotComputed(f"{name}: features incomplete (a generation run was interrupted)")
    ids, rows = [], []
    for shard in record["shards"]:
        with np.load(out / shard["features"], allow_pickle=False) as data:
            ids.append(data["observation_id"].astype(str))
            rows.append(data["features"].astype(np.float32))
    return np.concatenate(ids), np.concatenate(rows)


def export_npz(task: str, name: str, path: str | Path, root: str | Path | None = None,
               bank: str = BANK_VERSION) -> Path:
    """One NPZ (`observation_id`, `features` float32) of a representation: the engine's input form."""
    ids, features = read_features(task, name, root, bank)
    path = Path(path)
    np.savez(path, observation_id=ids, features=features)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark_data.generation.readout_features",
                                     description="Reference representations' features on a readout bank.")
    parser.add_argument("--task", choices=TASKS, action="append", help="repeatable; default both")
    parser.add_argument("--representation", action="append",
                        help="repeatable; default every reference representation of the task")
    parser.add_argument("--root", default=None, help="frozen data directory (default: the packaged one)")
    parser.add_argument("--bank", choices=BANKS, default=BANK_VERSION, help="bank version (default %(default)s)")
    parser.add_argument("--reuse", choices=BANKS, default=None,
                        help="first put this bank's stored vectors into --cache (same encoder only)")
    parser.add_argument("--cache", default=None,
                        help="directory of precomputed rows (read by the bank pass, written by --precompute)")
    parser.add_argument("--precompute", nargs="+", metavar="NPZ", default=None,
                        help="embed these image files (bank layout) into --cache instead of the bank")
    parser.add_argument("--record-weights", action="store_true",
                        help="only add weights_sha256 to features.json written before it existed")
    args = parser.parse_args(argv)
    if (args.precompute is not None or args.reuse) and args.cache is None:
        parser.error("--precompute and --reuse need --cache")
    import torch

    torch.set_num_threads(1)
    status = 0
    for task in args.task or TASKS:
        for name in args.representation or representation_names(task):
            try:
                if args.record_weights:
                    record = record_weights(task, name, root=args.root)
                    print(f"{task} {name}: weights_sha256 {record['weights_sha256']}", flush=True)
                    continue
                if args.precompute is not None:
                    precompute(task, name, [Path(p) for p in args.precompute], args.cache, root=args.root,
                               log=lambda line: print(line, flush=True))
                    continue
                if args.reuse:
                    rows = reuse_bank(task, name, args.reuse, args.cache, root=args.root)
                    print(f"{task} {name}: {rows} rows of bank {args.reuse} reusable", flush=True)
                write_features(task, name, root=args.root, cache=args.cache, bank=args.bank,
                               log=lambda line: print(line, flush=True))
            except (FeaturesNotComputed, InvalidInput) as exc:
                print(f"{task} {name}: {exc}", file=sys.stderr)
                status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
