"""Settings registry, generation pipeline and frozen artifacts of the benchmark."""

from expaudit.numerics import pin_kernels

pin_kernels()  # before any module of this package loads numpy or torch
