"""What the image policies share: the `LeanConv` backbone, training that does not follow the hash
seed, the torchvision stand-in.

Tiny networks on synthetic demonstrations, so the whole file runs in seconds
on one core; what is checked (shapes, bit-identical weights) does not depend
on the network's size.
"""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("robomimic")

from tests.support.paths import REPO_ROOT  # noqa: E402
from tests.support.policy_training import TINY, synthetic_demos, weights_digest  # noqa: E402

REPO = REPO_ROOT


def test_lean_conv_gives_the_feature_map_it_announces_and_refuses_other_strides():
    import torch

    from simulator.errors import BadLevel
    from simulator.policy_model import BACKBONE, _register_backbone
    from simulator.robomimic_compat import import_robomimic

    _register_backbone(import_robomimic())  # robomimic's models import after its torchvision stand-in
    import robomimic.models.obs_core as obs_core

    lean_conv = getattr(obs_core, BACKBONE)
    for stride, side in ((4, 8), (2, 16)):
        net = lean_conv(feature_stride=stride)
        assert net.output_shape([3, 32, 32]) == [32, side, side]
        assert tuple(net(torch.zeros(1, 3, 32, 32)).shape) == (1, 32, side, side)
    with pytest.raises(BadLevel, match="feature_stride must be 2 or 4, got 3"):
        lean_conv(feature_stride=3)


TRAIN_DIGEST = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.support.policy_training import TINY, synthetic_demos, weights_digest
from simulator.policy_recipe import train_recipe
policy, _ = train_recipe("stack", synthetic_demos(), TINY)
print("digest", weights_digest(policy))
"""


def test_training_does_not_depend_on_the_hash_seed():
    """robomimic keeps observation keys in sets in places; the network's module and feature
    order must not follow PYTHONHASHSEED. Two child processes with different hash seeds train
    the same weights."""
    digests = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "OMP_NUM_THREADS": "1"}
        proc = subprocess.run([sys.executable, "-c", TRAIN_DIGEST, str(REPO)], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        digests.append([ln for ln in proc.stdout.splitlines() if ln.startswith("digest ")][-1].split()[1])
    assert digests[0] == digests[1]


def test_the_digest_sees_training():
    """The digest above can tell two trainings apart (another seed, other weights)."""
    from dataclasses import replace

    import torch

    from simulator.policy_recipe import train_recipe

    threads = torch.get_num_threads()
    try:
        first, _ = train_recipe("stack", synthetic_demos(), TINY)
        other, _ = train_recipe("stack", synthetic_demos(), replace(TINY, seed=1))
    finally:
        torch.set_num_threads(threads)
    assert weights_digest(first) != weights_digest(other)


def test_torchvision_placeholder_raises_a_clear_error():
    from simulator.robomimic_compat import (TorchvisionUnavailableError, import_robomimic,
                                            torchvision_is_real)

    if torchvision_is_real():
        pytest.skip("a working torchvision is installed; the placeholder is not used")
    rm = import_robomimic()
    assert callable(rm.algo_factory) and callable(rm.config_factory)
    import torchvision
    from torchvision.transforms import functional  # the import forms robomimic uses resolve

    assert not torchvision_is_real()
    with pytest.raises(TorchvisionUnavailableError, match="torchvision"):
        torchvision.transforms.Compose([])
    with pytest.raises(TorchvisionUnavailableError, match=r"torchvision\.transforms\.functional\.resize"):
        functional.resize(None, 8)
    with pytest.raises(TorchvisionUnavailableError, match="torchvision"):
        torchvision.models.resnet18()
