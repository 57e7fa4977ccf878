"""Tokens, their rate limits and each owner's active submissions (Redis and the store).

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

import importlib

_SURFACE = {
    "ActiveSubmissions": "service.auth.tokens",
    "FailedAuthLimiter": "service.auth.tokens",
    "RateLimiter": "service.auth.tokens",
    "TokenInfo": "service.auth.tokens",
    "TokenRegistry": "service.auth.tokens",
    "authenticate_request": "service.auth.tokens",
    "client_address": "service.auth.tokens",
}

__all__ = sorted(_SURFACE)


def __getattr__(name: str):
    if name not in _SURFACE:
        raise AttributeError(f"module 'service.auth' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
