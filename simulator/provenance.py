"""Provenance of executed cells: which mechanism, weights and packages produced an outcome.

A cell's code version is the declared mechanism version of what ran (`replay/1`,
`policy/2+weights:...`), not a hash of files: sources can be edited, moved and renamed
freely as long as behaviour is kept, which the golden cells check. The sources' hash is
kept beside each cell as information (`SOURCES_KEY` in its packages record)."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from expaudit.errors import InvalidInput
from expaudit.numerics import blas_kernel, cpu_model, torch_cpu_capability

OUTCOME_SOURCES = ("osc.py", "stack_sim.py", "stack_scenes.py", "stack_expert.py", "replay.py",
                   "recording.py", "executor.py")
"""The simulator modules a Replay rollout runs; their hash is recorded beside each cell as
information (`SOURCES_KEY`), not as its code version."""
PACKAGES = ("robosuite", "mujoco", "numpy", "numba")
"""Packages whose versions can change a rollout."""
POLICY_SOURCES = ("osc.py", "stack_sim.py", "stack_scenes.py", "door_sim.py", "door_scenes.py",
                  "appearance.py", "policy_camera.py", "policy_model.py", "policy_rollout.py",
                  "robomimic_compat.py", "policy_recipe.py", "wrist_camera.py")
"""The simulator modules a policy rollout runs (besides the weights); their hash is recorded
beside each policy cell as information (`SOURCES_KEY`)."""
POLICY_PACKAGES = PACKAGES + ("torch", "robomimic")
"""Packages whose versions can change a policy rollout."""
CPU_KEY = "cpu"
"""Packages entry of a policy cell: the CPU it ran on (`expaudit.numerics.cpu_model`). Two CPUs
with the same instruction sets can still end a policy rollout in another final state."""
RENDERER_KEY = "renderer"
"""Packages entry of a policy cell: the OpenGL renderer and version its camera drew with. A
software renderer's vector width (llvmpipe's "256 bits" or "512 bits") changes the rounding
of pixels, hence a policy's actions and final state (docs/data.md, "What reproduces where")."""


REPLAY_MECHANISM = 1
"""Version of what a Replay rollout does, declared: bumped by any change of behaviour in the Replay
path, after which the frozen Replay cells are regenerated. The golden cells
(`tests/simulator/test_golden_cells.py`) re-execute stored cells and fail when behaviour changed without
a bump; editing, moving or renaming a source file that keeps behaviour changes nothing here."""
POLICY_MECHANISM = 2
"""Version of what a policy rollout does (besides the weights), declared like `REPLAY_MECHANISM`:
the recipe of docs/policy_protocol.md (`simulator.policy_recipe`: agent and wrist cameras). A
frozen policy's spec.json names its version. Version 1 (one agent-view camera, trained end to
end) was retired once no published policy was of it; its spec.json files name no version."""
RETIRED_POLICY_MECHANISMS = (1,)
"""Policy mechanism versions whose code is gone: a policy of one is refused by name."""
LEGACY_REPLAY_CODE_VERSIONS = {"sha256:c20bd05067b753bb": 1}
"""Code versions of Replay cells made while a cell's code version was a hash of the simulator's
source files (`replay_sources_sha256` then), with their mechanism version. Frozen: those cells
keep their stored value."""
SOURCES_KEY = "runner_sources"
"""Packages entry of a cell: `sha256:` + 16 hex digits over the mechanism's simulator sources, kept
as information (which files ran), never compared to decide whether two cells are comparable."""


def _source_hash(names: tuple[str, ...]) -> hashlib._Hash:
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update((root / name).read_bytes())
    return h


def code_version() -> str:
    """Code version of a Replay cell: `replay/<REPLAY_MECHANISM>`."""
    return f"replay/{REPLAY_MECHANISM}"


@lru_cache(maxsize=1)
def replay_sources_sha256() -> str:
    """`sha256:` + 16 hex digits over `OUTCOME_SOURCES` (information: `SOURCES_KEY`)."""
    return "sha256:" + _source_hash(OUTCOME_SOURCES).hexdigest()[:16]


@lru_cache(maxsize=1)
def policy_sources_sha256() -> str:
    """`sha256:` + 16 hex digits over `POLICY_SOURCES` (information: `SOURCES_KEY`)."""
    return "sha256:" + _source_hash(POLICY_SOURCES).hexdigest()[:16]


def policy_mechanism_of(policy_dir: str) -> int:
    """The mechanism version a frozen policy was made for: its spec.json's `policy_mechanism`
    (absent in the retired version 1's specs), refused unless it is `POLICY_MECHANISM`."""
    spec = json.loads((Path(policy_dir) / "spec.json").read_text())
    version = spec.get("policy_mechanism", 1)
    if version in RETIRED_POLICY_MECHANISMS:
        raise InvalidInput(f"{policy_dir}/spec.json: policy_mechanism {version!r} was retired; "
                           f"only version {POLICY_MECHANISM} policies load (retrain it with "
                           "`expaudit data train-policies`)")
    if version != POLICY_MECHANISM:
        raise InvalidInput(f"{policy_dir}/spec.json: policy_mechanism {version!r} is not {POLICY_MECHANISM}")
    return version


def replay_mechanism_of(stored_code_version: str) -> int | None:
    """The Replay mechanism version of a stored cell's code version (`replay/N`, or a legacy
    source hash of `LEGACY_REPLAY_CODE_VERSIONS`); None for anything else."""
    if stored_code_version.startswith("replay/"):
        number = stored_code_version.removeprefix("replay/")
        return int(number) if number.isdigit() else None
    return LEGACY_REPLAY_CODE_VERSIONS.get(stored_code_version)


def weights_sha256(policy_dir: str) -> str:
    """16 hex digits over a frozen policy's `spec.json` and `weights.pt`, read from disk on every
    call (weights can be retrained in place)."""
    h = hashlib.sha256()
    for name in ("spec.json", "weights.pt"):
        h.update(name.encode())
        h.update((Path(policy_dir) / name).read_bytes())
    return h.hexdigest()[:16]


def policy_code_version(policy_dir: str) -> str:
    """Code version of a policy cell: `policy/<mechanism>+weights:<weights_sha256>`.

    The mechanism is the policy's own (`policy_mechanism_of`); two cells share a code version
    exactly when the same declared mechanism ran the same weights. Callers keep the value
    together with the weights they loaded.
    """
    return f"policy/{policy_mechanism_of(policy_dir)}+weights:{weights_sha256(policy_dir)}"


def policy_code_versions(policy_dir: str) -> frozenset[str]:
    """Every stored code version that names this policy's current weights and mechanism: today's
    (`policy_code_version`) and the one its training record kept from when a cell's code version
    was a hash of sources and weights (cells made then keep it)."""
    versions = {policy_code_version(policy_dir)}
    record = Path(policy_dir) / "training.json"
    if record.is_file():
        legacy = json.loads(record.read_text()).get("code_version")
        if isinstance(legacy, str) and legacy.startswith("sha256:"):
            versions.add(legacy)
    return frozenset(versions)


BLAS_KERNEL_KEY = "numpy_blas_kernel"
"""Key of the OpenBLAS kernel in a cell's packages record (`expaudit.numerics`)."""
TORCH_KERNEL_KEY = "torch_cpu_capability"
"""Key of torch's CPU kernels in a policy cell's packages record (`expaudit.numerics`)."""


def _versions(names: tuple[str, ...]) -> str:
    versions = {name: metadata.version(name) for name in names}
    versions[BLAS_KERNEL_KEY] = blas_kernel()
    return json.dumps(versions, sort_keys=True)


@lru_cache(maxsize=1)
def package_versions() -> str:
    """JSON object of the versions of `PACKAGES` installed here, numpy's BLAS kernel and the
    Replay sources' hash (`SOURCES_KEY`)."""
    versions = json.loads(_versions(PACKAGES))
    versions[SOURCES_KEY] = replay_sources_sha256()
    return json.dumps(versions, sort_keys=True)


@lru_cache(maxsize=None)
def policy_package_versions(device: str = "cpu", renderer: str | None = None) -> str:
    """JSON object of the versions of `POLICY_PACKAGES`, numpy's and torch's CPU kernels, the
    inference device, the CPU (`CPU_KEY`) and, when given, the OpenGL renderer the policy camera drew with
    (`RENDERER_KEY`)."""
    versions = json.loads(_versions(POLICY_PACKAGES))
    versions[SOURCES_KEY] = policy_sources_sha256()
    versions[TORCH_KERNEL_KEY] = torch_cpu_capability()
    versions["device"] = device
    versions[CPU_KEY] = cpu_model()
    if renderer is not None:
        versions[RENDERER_KEY] = renderer
    return json.dumps(versions, sort_keys=True)
