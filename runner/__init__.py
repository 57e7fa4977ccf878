"""Rollouts in robosuite/MuJoCo: scenes, scripted experts, reuse mechanisms, the executor."""

from expaudit.numerics import pin_blas_kernel

pin_blas_kernel()  # before any module of this package loads numpy
