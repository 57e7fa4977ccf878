"""The audit engine (AUDIT_SPEC): metrics, reference rules, reports, HTML, publishing."""

from expaudit.numerics import pin_blas_kernel

pin_blas_kernel()  # before any module of this package loads numpy
