"""expaudit: audit experience retrieval in robotics against complete transfer matrices."""

__version__ = "0.1.0"

from expaudit.numerics import pin_blas_kernel  # noqa: E402

pin_blas_kernel()  # before any expaudit module loads numpy
