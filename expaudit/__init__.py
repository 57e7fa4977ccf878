"""expaudit: audit experience retrieval in robotics against complete transfer matrices."""

__version__ = "0.1.0"

from expaudit.numerics import pin_kernels  # noqa: E402

pin_kernels()  # before any expaudit module loads numpy or torch
