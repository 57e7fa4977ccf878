"""The benchmark service: Flask REST API, auth, validation, jobs, object storage."""

from expaudit.numerics import pin_blas_kernel

pin_blas_kernel()  # before any module of this package loads numpy
