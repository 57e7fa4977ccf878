"""Tokens, their rate limits and each owner's active submissions (Redis and the store).

The names below are what the rest of the project imports from this package; each
loads its module on first use.
"""

from __future__ import annotations

from expaudit.lazy import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    ".tokens": ("ActiveSubmissions", "FailedAuthLimiter", "RateLimiter", "TokenInfo", "TokenRegistry",
                "authenticate_request", "client_address"),
})
