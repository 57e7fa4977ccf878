"""Settings registry, generation pipeline and frozen artifacts of the benchmark."""

from expaudit.numerics import pin_blas_kernel

pin_blas_kernel()  # before any module of this package loads numpy
