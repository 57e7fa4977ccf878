"""One floating-point path on every x86 machine: OpenBLAS's kernel is pinned before numpy loads it.

numpy's bundled OpenBLAS picks its kernels by CPU at load time (Haswell on
AVX2 machines, Cooperlake or SkylakeX on AVX-512 ones), and the kernels round
differently. The operational-space controller runs small matrix products every
physics step, so a rollout's final state, and sometimes its outcome, depends
on the kernel: stored Replay cells re-executed on an AVX-512 machine differ in
their final state hashes unless the kernel is pinned. The benchmark's cells
were executed with the Haswell kernel, which every x86-64 CPU with AVX2 runs.

`pin_blas_kernel` only sets a default (an explicit `OPENBLAS_CORETYPE` wins)
and must run before numpy is first imported; every expaudit package calls it
on import. `blas_kernel` reports the kernel the loaded OpenBLAS actually
uses, which each stored cell records.
"""

from __future__ import annotations

import os

BLAS_KERNEL = "Haswell"
"""The OpenBLAS kernel the benchmark's rollouts are executed with."""


def pin_blas_kernel() -> None:
    """Make OpenBLAS load `BLAS_KERNEL` unless the environment already names one."""
    os.environ.setdefault("OPENBLAS_CORETYPE", BLAS_KERNEL)


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
