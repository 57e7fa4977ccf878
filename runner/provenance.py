"""Provenance of executed cells: which code and which packages produced an outcome."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from expaudit.errors import InvalidInput
from expaudit.numerics import blas_kernel, cpu_model, torch_cpu_capability

OUTCOME_SOURCES = ("osc.py", "stack_sim.py", "scenes.py", "stack_expert.py", "replay.py",
                   "recording.py", "executor.py")
"""The runner modules whose code determines an outcome; their hash is the code version."""
PACKAGES = ("robosuite", "mujoco", "numpy", "numba")
"""Packages whose versions can change a rollout."""
POLICY_SOURCES = ("osc.py", "stack_sim.py", "scenes.py", "door_sim.py", "door_scenes.py",
                  "appearance.py", "policy_camera.py", "policy_model.py", "policy_rollout.py",
                  "robomimic_compat.py")
"""The runner modules whose code determines a policy cell's outcome (besides the weights)."""
RECIPE_POLICY_SOURCES = POLICY_SOURCES + ("policy_recipe.py", "wrist_camera.py")
"""Policy mechanism 2 adds the two-camera policy on cached features and its camera."""
POLICY_MECHANISM_SOURCES = {1: POLICY_SOURCES, 2: RECIPE_POLICY_SOURCES}
"""The sources a policy of each mechanism version runs (its spec.json names the version)."""
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
"""Version of what a Replay rollout does. Bumped only by a change of behaviour in
`OUTCOME_SOURCES`; the frozen Replay cells are then regenerated under the new version."""
REPLAY_SOURCE_VERSIONS = {"sha256:c20bd05067b753bb": 1}
"""Every code version (`code_version()`) the Replay sources have had, with its mechanism
version. A source change that keeps behaviour (a move, a comment, an import path) is recorded
here under the same mechanism version once the golden cells re-execute unchanged
(`tests/test_golden_cells.py`); stored cells keep their code version and stay comparable."""
POLICY_MECHANISM = 2
"""Version of what a policy rollout does (the sources of `POLICY_MECHANISM_SOURCES`, besides
weights): 1, one agent-view camera (`runner.policy_model`); 2, the recipe of
docs/policy_protocol.md (`runner.policy_recipe`: agent and wrist cameras). A frozen policy's
spec.json names its version; cells of a version-1 policy keep their version-1 code version."""
POLICY_SOURCE_VERSIONS = {"sha256:9a8c0c33fe1333f1": 1, "sha256:00b2bc53ab22561f": 2}
"""Every hash of a mechanism's sources alone (`policy_source_version(m)`), with its mechanism
version; recorded like `REPLAY_SOURCE_VERSIONS`. Version 2 has no stored cell yet: until its
cells are generated its one entry is the live hash (the staged policies' training.json is
written again when it changes)."""


def _source_hash(names: tuple[str, ...]) -> hashlib._Hash:
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update((root / name).read_bytes())
    return h


@lru_cache(maxsize=1)
def code_version() -> str:
    """`sha256:` + the first 16 hex digits of the hash over the outcome-determining sources."""
    return "sha256:" + _source_hash(OUTCOME_SOURCES).hexdigest()[:16]


@lru_cache(maxsize=None)
def policy_source_version(mechanism: int = POLICY_MECHANISM) -> str:
    """`sha256:` + 16 hex digits over a policy mechanism's sources alone (no weights): the key
    of `POLICY_SOURCE_VERSIONS`."""
    return "sha256:" + _source_hash(POLICY_MECHANISM_SOURCES[mechanism]).hexdigest()[:16]


def policy_mechanism_of(policy_dir: str) -> int:
    """The mechanism version a frozen policy was made for: its spec.json's `policy_mechanism`
    (absent in version 1's specs)."""
    spec = json.loads((Path(policy_dir) / "spec.json").read_text())
    version = spec.get("policy_mechanism", 1)
    if version not in POLICY_MECHANISM_SOURCES:
        raise InvalidInput(f"{policy_dir}/spec.json: policy_mechanism {version!r} is not one of "
                           f"{sorted(POLICY_MECHANISM_SOURCES)}")
    return version


def replay_mechanism_of(stored_code_version: str) -> int | None:
    """The Replay mechanism version a stored cell's code version belongs to; None when the
    hash was never recorded (code the project did not ship)."""
    return REPLAY_SOURCE_VERSIONS.get(stored_code_version)


def policy_code_version(policy_dir: str) -> str:
    """Code version of a policy cell: the policy sources plus the policy's frozen files.

    `policy_dir` holds `spec.json` and `weights.pt`; the sources are those of the
    policy's mechanism version (`policy_mechanism_of`). Two cells share a code
    version exactly when they ran the same code with the same weights. Read
    from disk on every call (weights can be retrained in place); callers keep
    the value together with the weights they loaded.
    """
    h = _source_hash(POLICY_MECHANISM_SOURCES[policy_mechanism_of(policy_dir)])
    for name in ("spec.json", "weights.pt"):
        h.update(name.encode())
        h.update((Path(policy_dir) / name).read_bytes())
    return "sha256:" + h.hexdigest()[:16]


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
    """JSON object of the versions of `PACKAGES` installed here and numpy's BLAS kernel."""
    return _versions(PACKAGES)


@lru_cache(maxsize=None)
def policy_package_versions(device: str = "cpu", renderer: str | None = None) -> str:
    """JSON object of the versions of `POLICY_PACKAGES`, numpy's and torch's CPU kernels, the
    inference device, the CPU (`CPU_KEY`) and, when given, the OpenGL renderer the policy camera drew with
    (`RENDERER_KEY`)."""
    versions = json.loads(_versions(POLICY_PACKAGES))
    versions[TORCH_KERNEL_KEY] = torch_cpu_capability()
    versions["device"] = device
    versions[CPU_KEY] = cpu_model()
    if renderer is not None:
        versions[RENDERER_KEY] = renderer
    return json.dumps(versions, sort_keys=True)
