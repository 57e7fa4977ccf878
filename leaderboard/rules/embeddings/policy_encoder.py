"""policy_encoder: the visual encoder of a task's Policy+DR image policies as an embedding rule.

An image's embedding is the three K=3 Policy+DR policies' agent-view features (robomimic
`VisualCore`), concatenated in experience order and compared by cosine similarity: it asks
whether the policies' own view of a scene predicts transfer. Without the task's three trained
policies the rule is "not computed", never random weights; `--export` writes the features of
every query and base-scene image. Details: docs/reference_rules.md, "The policy encoder".
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from benchmark_data.image_archive import BASE_TAR, QUERY_TAR, read_tar_images
from benchmark_data.library import read_experiences
from benchmark_data.paths import library_dir, query_set_dir
from benchmark_data.policy_files import (ENCODER_MECHANISM, encoder_features_path, is_trained, policy_dir,
                                         policy_experiences)
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import LIBRARY_IDS, QUERY_SETS, UnknownTask
from expaudit.errors import DataNotFound, InvalidInput
from leaderboard.rules.embeddings.base import WEIGHTS_MISSING, NotComputed, check_images, file_sha256
from simulator.provenance import policy_mechanism_of

NAME = "policy_encoder"
TASKS = ("stack", "door")
POLICY_FILES = ("weights.pt", "spec.json", "training.json")
BATCH = 32
"""Images per forward pass (bounds memory on small machines)."""
PREPROCESSING = ("policy_encoder: concatenated VisualCore features of the Policy+DR policies; "
                 "Pillow RGB resize (image_size, image_size) BILINEAR, /255, CHW")
FEATURES_COLUMN = "features"
NO_TASK_REASON = (f"{WEIGHTS_MISSING}: the Policy+DR image policies are not trained for a setting "
                  "without a task: policy_encoder reads the task's own policies (stack or door)")


class PolicyMismatch(InvalidInput, ValueError):
    """A frozen policy whose network or weights are not what the encoder reads."""


class FeaturesNotComputed(DataNotFound, FileNotFoundError):
    """The features cannot be exported here; the message is the "not computed" reason (a
    policy missing, most often)."""


def task_experience_ids(task: str) -> tuple[str, ...]:
    """The experience ids of a task's Policy+DR policies, in library order (e000, e001, e002)."""
    if task not in TASKS:
        raise UnknownTask(f"task must be one of {TASKS}, got {task!r}")
    return tuple(eid for t, mechanism, eid in policy_experiences()
                 if t == task and mechanism == ENCODER_MECHANISM)


def missing_policies(task: str, root: str | Path | None = None) -> list[str]:
    """Experience ids of the task's Policy+DR policies that are not trained under `root`."""
    return [eid for eid in task_experience_ids(task) if not is_trained(ENCODER_MECHANISM, eid, root)]


def not_computed_reason(task: str | None, root: str | Path | None = None) -> str | None:
    """Why the rule cannot run for `task` here, or None when it can."""
    if task is None:
        return NO_TASK_REASON
    missing = missing_policies(task, root)
    if missing:
        names = ", ".join(f"policies/{ENCODER_MECHANISM}/{eid}" for eid in missing)
        return (f"{WEIGHTS_MISSING}: the Policy+DR image policies are not trained for task "
                f"{task!r}: {names} missing from the frozen data (each needs "
                f"{', '.join(POLICY_FILES)}; `expaudit data train-policies` trains them)")
    for module, extra in (("torch", "policies"), ("robomimic", "policies"), ("PIL", "embed")):
        if importlib.util.find_spec(module) is None:
            return (f"{module} is not installed: install the {extra} extra "
                    f"(scripts/bootstrap.sh {extra})")
    return None


def policies_hash(directories: Sequence[Path]) -> str:
    """"sha256:<hex>" over the preprocessing and each policy's weights and spec, in order."""
    digest = hashlib.sha256(PREPROCESSING.encode())
    for directory in directories:
        for name in ("weights.pt", "spec.json"):
            digest.update(f"\n{directory.name}/{name} {file_sha256(directory / name)}".encode())
    return "sha256:" + digest.hexdigest()


def image_batch(images: Sequence[np.ndarray], size: int) -> np.ndarray:
    """(N, 3, size, size) float32 in [0, 1]: Pillow bilinear resize, RGB, /255, channels first."""
    from PIL import Image

    resized = [np.asarray(Image.fromarray(image).convert("RGB").resize(
        (size, size), Image.BILINEAR), dtype=np.float32) / 255.0 for image in images]
    if not resized:
        return np.zeros((0, 3, size, size), dtype=np.float32)
    return np.ascontiguousarray(np.stack(resized).transpose(0, 3, 1, 2), dtype=np.float32)


def centre_crop(batch: np.ndarray, crop: int) -> np.ndarray:
    """The centre `crop` x `crop` of (N, 3, H, W) images; all of them when `crop` is 0."""
    if not crop:
        return batch
    top, left = (batch.shape[2] - crop) // 2, (batch.shape[3] - crop) // 2
    return np.ascontiguousarray(batch[:, :, top:top + crop, left:left + crop])


def _agent_view_encoder(directory: Path):
    """(VisualCore, image size, centre crop or 0) of a frozen policy's agent view (a policy of a
    retired mechanism is refused by name)."""
    from simulator.policy_recipe import RecipePolicy

    policy_mechanism_of(str(directory))
    try:
        policy = RecipePolicy.load(directory)
    except RuntimeError as exc:
        detail = " ".join(part.strip() for part in str(exc).splitlines()[:2])
        raise PolicyMismatch(f"policy {directory}/weights.pt does not match its spec.json: {detail}") from exc
    return policy.encoders["agentview"].eval(), policy.spec.image_size, policy.spec.crop_size


class PolicyEncoder:
    """The concatenated visual features of a task's three Policy+DR policies (cosine)."""

    name = NAME
    metric = "cosine"

    def __init__(self, task: str, directories: Sequence[Path]) -> None:
        self.task = task
        self.experience_ids = tuple(d.name for d in directories)
        self.content_hash = policies_hash(directories)
        self._cores, self._sizes, self._crops = [], [], []
        for directory in directories:
            core, size, crop = _agent_view_encoder(directory)
            self._cores.append(core)
            self._sizes.append(size)
            self._crops.append(crop)
        self.dimension = sum(int(core.output_shape(core.input_shape)[0]) for core in self._cores)

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """(N, 3 x feature_dim) float32: each policy's features, concatenated in experience order."""
        import torch

        images = check_images(images)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # float sums must not depend on the thread count
        try:
            rows = []
            with torch.inference_mode():
                for start in range(0, len(images), BATCH):
                    chunk = images[start:start + BATCH]
                    # every forward pass has BATCH images: the CPU convolution kernels depend on the
                    # batch size, and a vector must not depend on its neighbours in the call
                    padded = list(chunk) + [np.zeros_like(chunk[0])] * (BATCH - len(chunk))
                    parts = [core(torch.from_numpy(centre_crop(image_batch(padded, size), crop)))[:len(chunk)]
                             .to(torch.float32).numpy()
                             for core, size, crop in zip(self._cores, self._sizes, self._crops)]
                    rows.append(np.concatenate(parts, axis=1))
        finally:
            torch.set_num_threads(threads)
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)


def load_policy_encoder(task: str | None, root: str | Path | None = None) -> PolicyEncoder | NotComputed:
    """The policy encoder of `task` from the frozen policies under `root`, or why not computed."""
    reason = not_computed_reason(task, root)
    if reason is not None:
        return NotComputed(NAME, reason)
    return PolicyEncoder(task, [policy_dir(ENCODER_MECHANISM, eid, root)
                                for eid in task_experience_ids(task)])


# ---- export ------------------------------------------------------------------------------


def task_images(task: str, root: str | Path | None = None) -> list[tuple[dict, np.ndarray]]:
    """(row keys, image) of every query image of the task's query sets, then every base image.

    Query sets in registry order, scenes in `scenes.parquet` order; base
    scenes in the library's `experiences.parquet` order.
    """

    out = []
    for query_set in (q for q, t in QUERY_SETS.items() if t == task):
        ids = list(read_scenes(query_set, root).scene_id)
        images = read_tar_images(query_set_dir(query_set, root) / QUERY_TAR, ids)
        out += [({"kind": "query", "query_set": query_set, "scene_id": sid, "experience_id": None}, im)
                for sid, im in zip(ids, images)]
    library = LIBRARY_IDS[task]
    ids = list(read_experiences(library, root).experience_id)
    images = read_tar_images(library_dir(library, root) / BASE_TAR, ids)
    out += [({"kind": "base", "query_set": None, "scene_id": None, "experience_id": eid}, im)
            for eid, im in zip(ids, images)]
    return out


def export_features(task: str, root: str | Path | None = None, out: str | Path | None = None, *,
                    policies_root: str | Path | None = None) -> Path:
    """Write the policy-encoder features of the task's query and base images to Parquet.

    Images come from `root`, the policies from `policies_root` (default `root`): a staging
    root's new policies can be exported before they replace the published ones.

    Columns: `kind` ("query" or "base"), `query_set` and `scene_id` (query
    rows; null for base rows), `experience_id` (base rows; null for query
    rows), `features` (list<float32>, 3 x feature_dim). The file's metadata
    holds the encoder's content hash and the policies' experience ids.
    Raises `FeaturesNotComputed` (a FileNotFoundError) with the "not computed"
    reason when a policy is missing.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    encoder = load_policy_encoder(task, root if policies_root is None else policies_root)
    if isinstance(encoder, NotComputed):
        raise FeaturesNotComputed(encoder.message)
    rows = task_images(task, root)
    vectors = encoder.embed([image for _, image in rows])
    columns = {key: pa.array([keys[key] for keys, _ in rows], type=pa.string())
               for key in ("kind", "query_set", "scene_id", "experience_id")}
    columns[FEATURES_COLUMN] = pa.array(list(vectors), type=pa.list_(pa.float32()))
    metadata = {"content_hash": encoder.content_hash, "task": task,
                "policies": ",".join(f"{ENCODER_MECHANISM}/{e}" for e in encoder.experience_ids),
                "definition": PREPROCESSING}
    table = pa.table(columns).replace_schema_metadata(metadata)
    path = Path(out) if out is not None else encoder_features_path(task, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m leaderboard.rules.embeddings.policy_encoder",
        description="Export the Policy+DR visual-encoder features of a task's query and base images.")
    parser.add_argument("--export", action="store_true", required=True,
                        help="write policies/policy_dr/encoder_features_<task>.parquet")
    parser.add_argument("--task", choices=TASKS, action="append",
                        help="task to export (repeatable; default: both)")
    parser.add_argument("--root", default=None, help="frozen data directory (default: the packaged one)")
    args = parser.parse_args(argv)
    status = 0
    for task in args.task or TASKS:
        try:
            path = export_features(task, args.root)
        except FileNotFoundError as exc:
            print(f"{task}: {exc}", file=sys.stderr)
            status = 2
            continue
        print(f"{task}: wrote {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
