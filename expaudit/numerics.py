"""One floating-point path on every x86 machine: the CPU kernels of OpenBLAS and torch are pinned.

numpy's OpenBLAS and torch pick their CPU kernels at load time (OpenBLAS: Haswell,
SkylakeX, Cooperlake, Zen, ...), the kernels round differently, and a rollout's final
state (for a closed-loop policy, its whole episode) follows the last bit. So stored cells
re-execute bit for bit only with the kernels they were made with: Haswell for OpenBLAS,
AVX2 for torch (`TORCH_CPU_CAPABILITY`), pinned on x86-64 CPUs with AVX2 only.

`pin_kernels` only sets defaults (an explicit `OPENBLAS_CORETYPE` or `ATEN_CPU_CAPABILITY`
wins) and must run before numpy and torch are first imported; every expaudit package
calls it on import. `blas_kernel` and `torch_cpu_capability` report what the loaded
libraries use, which each stored cell records. Measurements: docs/data.md.
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache

BLAS_KERNEL = "Haswell"
"""The OpenBLAS kernel the benchmark's rollouts are executed with."""
TORCH_CPU_CAPABILITY = "avx2"
"""The torch CPU kernels (`ATEN_CPU_CAPABILITY`) policy cells are executed with on x86-64."""


@lru_cache(maxsize=8)
def _cpuinfo_field(name: str) -> str:
    """The first value of a /proc/cpuinfo field on x86-64 Linux; "" elsewhere or when unreadable."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags on x86-64 Linux (/proc/cpuinfo); empty elsewhere or when unreadable."""
    return frozenset(_cpuinfo_field("flags").split())


def cpu_vendor() -> str:
    """"GenuineIntel", "AuthenticAMD", ... on x86-64 Linux; "" elsewhere or when unreadable.
    Two CPUs with the same instruction sets can still round a rollout differently: torch's
    and llvmpipe's code paths are picked per CPU, not per flag alone."""
    return _cpuinfo_field("vendor_id")


def cpu_model() -> str:
    """The CPU's vendor, family, model and name, e.g. "AuthenticAMD family 25 model 17 (AMD EPYC)";
    "" where /proc/cpuinfo does not say. Recorded with each policy cell."""
    vendor = cpu_vendor()
    if not vendor:
        return ""
    name = _cpuinfo_field("model name")
    return (f"{vendor} family {_cpuinfo_field('cpu family')} model {_cpuinfo_field('model')}"
            + (f" ({name})" if name else ""))


def cpu_has_avx2() -> bool:
    """Whether this is an x86-64 CPU with AVX2 (read from /proc/cpuinfo; False where it is absent)."""
    return "avx2" in cpu_flags()


AVX512_FLAGS = frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq"})
"""The AVX-512 subsets torch's AVX512 CPU kernels use."""


def cpu_has_avx512() -> bool:
    """Whether the CPU runs torch's AVX512 kernels. Asking torch for them elsewhere
    (`ATEN_CPU_CAPABILITY=avx512`) is not refused: the process dies of an illegal instruction."""
    return AVX512_FLAGS <= cpu_flags()


def kernel_env() -> dict[str, str]:
    """The environment variables that pin the kernels here: both need AVX2, so none elsewhere
    (forcing them on a CPU without it would crash on the first unsupported instruction)."""
    if not cpu_has_avx2():
        return {}
    return {"OPENBLAS_CORETYPE": BLAS_KERNEL, "ATEN_CPU_CAPABILITY": TORCH_CPU_CAPABILITY}


def pin_kernels() -> None:
    """Set `kernel_env` as defaults of this process (and its children) unless already set."""
    for name, value in kernel_env().items():
        os.environ.setdefault(name, value)


def torch_cpu_capability() -> str:
    """The CPU kernels the loaded torch dispatches to (e.g. "AVX2")."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


def blas_kernel() -> str:
    """The kernel numpy's OpenBLAS runs with here (its core name), or "unknown"."""
    import ctypes
    import glob

    import numpy

    libs = os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libopenblas*"))):
        lib = ctypes.CDLL(path)
        for symbol in ("openblas_get_corename64_", "openblas_get_corename"):
            corename = getattr(lib, symbol, None)
            if corename is not None:
                corename.restype = ctypes.c_char_p
                return corename().decode()
    return "unknown"
