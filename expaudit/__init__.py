"""expaudit: audit experience retrieval in robotics against complete transfer matrices."""

__version__ = "0.1.0"
