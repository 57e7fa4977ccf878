"""robomimic's model classes beside a CPU torch build: the one workaround, in one place.

robomimic 0.3.0 imports torchvision at module level (`robomimic.models.base_nets`
and `obs_core`), but uses it only for the ResNet backbones and the colour and
crop randomizers. expaudit's policies use neither (a shallow convolutional
backbone, no randomizer). PyPI's torchvision is built against CUDA torch and
fails to import beside the CPU wheel (`operator torchvision::nms does not
exist`), so when the real torchvision cannot be imported, `import_robomimic`
registers a placeholder package that satisfies those import statements and
raises a clear error if anything actually calls into it. Where torchvision
imports (a CUDA runner image), the real one is used.

robomimic's own environment wrapper (mujoco_py, old controller configs) is not
used at all: rollouts run on `simulator.stack_sim` / `simulator.door_sim`.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import types

from expaudit.errors import InternalError


class TorchvisionUnavailableError(InternalError, RuntimeError):
    """Code called into torchvision, which this installation replaces by a placeholder."""


def _unavailable(name: str):
    def call(*args, **kwargs):
        raise TorchvisionUnavailableError(
            f"torchvision.{name} was called, but torchvision cannot be imported beside this torch "
            f"build; expaudit's policies use no torchvision backbone or randomizer")
    return call


class _Placeholder(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _unavailable(f"{self.__name__.split('.', 1)[-1]}.{name}")


def _install_placeholder() -> None:
    root = _Placeholder("torchvision")
    root.__path__ = []  # a package, so `from torchvision.transforms import ...` resolves
    for sub in ("transforms", "transforms.functional", "models"):
        module = _Placeholder(f"torchvision.{sub}")
        sys.modules[f"torchvision.{sub}"] = module
    sys.modules["torchvision"] = root
    root.transforms = sys.modules["torchvision.transforms"]
    root.transforms.functional = sys.modules["torchvision.transforms.functional"]
    root.models = sys.modules["torchvision.models"]


def torchvision_is_real() -> bool:
    """True when the installed torchvision imports beside this torch."""
    module = sys.modules.get("torchvision")
    if isinstance(module, _Placeholder):
        return False
    try:
        importlib.import_module("torchvision")
    except Exception:  # absent, or a build for another torch (raises RuntimeError at import)
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        return False
    return True


@contextlib.contextmanager
def quiet():
    """Swallow what robomimic prints to stdout (banners, observation tables); errors still raise."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def import_robomimic():
    """Import robomimic's config, algorithm and observation utilities; returns them as a namespace."""
    if not torchvision_is_real():
        _install_placeholder()
    with quiet():  # robomimic prints a banner about its private macro file at import
        from robomimic.algo import algo_factory
        from robomimic.config import config_factory
        import robomimic.utils.obs_utils as obs_utils

    return types.SimpleNamespace(algo_factory=algo_factory, config_factory=config_factory,
                                 obs_utils=obs_utils)
