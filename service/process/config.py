"""The one place that reads the service's environment variables.

Everything else receives a `ServiceConfig` (or a plain config dict in
tests); no other module looks at `os.environ`. Every variable (`EXPAUDIT_STORE`,
`EXPAUDIT_REDIS_URL`, `EXPAUDIT_SANDBOX`, ...) with its meaning and default:
docs/service.md ("Configuration").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from benchmark_data.paths import sealed_cells_files
from expaudit.errors import InvalidInput
from sandbox.base import Protected
from service.process import defaults


class ConfigError(InvalidInput, ValueError):
    """An environment variable holds a value the service cannot use."""


@dataclass(frozen=True)
class ServiceConfig:
    """Resolved configuration of one service process.

    Attributes:
        store: local directory path or ``s3://bucket[/prefix]``.
        s3_endpoint: endpoint URL for S3-protocol servers; None means AWS.
        s3_region: region used for signatures.
        s3_access_key, s3_secret_key: credentials (never logged; see `redacted`).
        redis_url: where queues, caches and rate-limit counters live.
        admin_token: bearer token allowed to manage tokens; None disables admin.
        max_upload_bytes, rate_limit_per_minute, max_active_submissions: limits.
        public_url: base URL shown to users; None when unknown.
        n_shuffles, n_bootstrap: audit resampling counts; None means the audit
            engine's defaults (AUDIT_SPEC: 2000 each). Reports record them.
        catalog: a directory of settings (`service.catalog.catalog.DirectoryCatalog`);
            None serves the benchmark's frozen settings.
        frozen_root: the published frozen benchmark directory; None is the one in the
            package. The service never writes it.
        cells_dir: the computed-cells directory (`computed_cells_dir`); None is the
            default beside the store.
        sandbox: backend of container submissions (`SANDBOX_BACKENDS`).
        selector_wall_seconds: wall-clock limit of one selector run.
        sealed_submissions_per_day: submissions to sealed settings per token owner per UTC day.
    """

    store: str = defaults.LOCAL_STORE_DIR
    s3_endpoint: str | None = None
    s3_region: str = "us-east-1"
    s3_access_key: str | None = field(default=None, repr=False)
    s3_secret_key: str | None = field(default=None, repr=False)
    redis_url: str | None = None
    admin_token: str | None = field(default=None, repr=False)
    max_upload_bytes: int = defaults.MAX_UPLOAD_BYTES
    rate_limit_per_minute: int = defaults.RATE_LIMIT_PER_MINUTE
    max_active_submissions: int = defaults.MAX_ACTIVE_SUBMISSIONS
    trusted_proxies: int = defaults.TRUSTED_PROXIES
    public_url: str | None = None
    n_shuffles: int | None = None
    n_bootstrap: int | None = None
    catalog: str | None = None
    frozen_root: str | None = None
    cells_dir: str | None = None
    sandbox: str = defaults.SANDBOX_BACKEND
    selector_wall_seconds: int = defaults.SELECTOR_WALL_SECONDS
    sealed_submissions_per_day: int = defaults.SEALED_SUBMISSIONS_PER_DAY
    worker_queues: tuple[str, ...] = defaults.WORKER_QUEUES

    def __post_init__(self) -> None:
        unknown = [q for q in self.worker_queues if q not in defaults.WORKER_QUEUE_CHOICES]
        if unknown or not self.worker_queues:
            raise ConfigError(f"EXPAUDIT_WORKER_QUEUES (or --queues) must name one or more of "
                                f"{list(defaults.WORKER_QUEUE_CHOICES)}, got "
                                f"{','.join(self.worker_queues)!r}")
        if self.sandbox not in defaults.SANDBOX_BACKENDS:
            raise ConfigError(f"EXPAUDIT_SANDBOX must be one of {list(defaults.SANDBOX_BACKENDS)}, "
                                f"got {self.sandbox!r}")
        if not 1 <= self.selector_wall_seconds <= defaults.SELECTOR_WALL_SECONDS_MAX:
            raise ConfigError("EXPAUDIT_SELECTOR_WALL_SECONDS must be between 1 and "
                                f"{defaults.SELECTOR_WALL_SECONDS_MAX}, got {self.selector_wall_seconds}")

    @property
    def is_s3(self) -> bool:
        return self.store.startswith("s3://")

    def with_overrides(self, config: Mapping[str, object] | None) -> "ServiceConfig":
        """A copy with the keys of `config` replaced (unknown keys are an error)."""
        if not config:
            return self
        known = set(asdict(self))
        unknown = sorted(set(config) - known)
        if unknown:
            raise ConfigError(f"unknown configuration key(s) {unknown}; known: {sorted(known)}")
        return replace(self, **dict(config))

    def redacted(self) -> dict[str, object]:
        """The configuration as a dict with every secret replaced, safe to log."""
        out = asdict(self)
        for key in ("s3_access_key", "s3_secret_key", "admin_token"):
            if out[key] is not None:
                out[key] = "***"
        if out["redis_url"] is not None:
            out["redis_url"] = redacted_url(out["redis_url"])
        return out


def redacted_url(url: str) -> str:
    """`url` with its password (in the user part or a `password=` parameter) as `***`, safe to
    show; a text that is not a URL comes back unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        if ":" in user:
            netloc = f"{user.split(':', 1)[0]}:***@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in pairs],
                          safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _int(environ: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def _opt(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name, "")
    return value or None


def from_env(environ: Mapping[str, str] | None = None) -> ServiceConfig:
    """Read the service configuration from `environ` (default: the process environment)."""
    env = os.environ if environ is None else environ
    return ServiceConfig(
        store=env.get("EXPAUDIT_STORE") or defaults.LOCAL_STORE_DIR,
        s3_endpoint=_opt(env, "EXPAUDIT_S3_ENDPOINT"),
        s3_region=env.get("EXPAUDIT_S3_REGION") or "us-east-1",
        s3_access_key=_opt(env, "AWS_ACCESS_KEY_ID"),
        s3_secret_key=_opt(env, "AWS_SECRET_ACCESS_KEY"),
        redis_url=_opt(env, "EXPAUDIT_REDIS_URL"),
        admin_token=_opt(env, "EXPAUDIT_ADMIN_TOKEN"),
        max_upload_bytes=_int(env, "EXPAUDIT_MAX_UPLOAD_BYTES", defaults.MAX_UPLOAD_BYTES),
        rate_limit_per_minute=_int(env, "EXPAUDIT_RATE_LIMIT_PER_MINUTE",
                                   defaults.RATE_LIMIT_PER_MINUTE),
        max_active_submissions=_int(env, "EXPAUDIT_MAX_ACTIVE_SUBMISSIONS",
                                    defaults.MAX_ACTIVE_SUBMISSIONS),
        trusted_proxies=_int(env, "EXPAUDIT_TRUSTED_PROXIES", defaults.TRUSTED_PROXIES, minimum=0),
        public_url=_opt(env, "EXPAUDIT_PUBLIC_URL"),
        n_shuffles=_int(env, "EXPAUDIT_N_SHUFFLES", 0) or None,
        n_bootstrap=_int(env, "EXPAUDIT_N_BOOTSTRAP", 0) or None,
        catalog=_opt(env, "EXPAUDIT_CATALOG"),
        frozen_root=_opt(env, "EXPAUDIT_FROZEN_ROOT"),
        cells_dir=_opt(env, "EXPAUDIT_CELLS_DIR"),
        sandbox=env.get("EXPAUDIT_SANDBOX") or defaults.SANDBOX_BACKEND,
        selector_wall_seconds=_int(env, "EXPAUDIT_SELECTOR_WALL_SECONDS",
                                   defaults.SELECTOR_WALL_SECONDS),
        sealed_submissions_per_day=_int(env, "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY",
                                        defaults.SEALED_SUBMISSIONS_PER_DAY),
        worker_queues=parse_queues(env.get("EXPAUDIT_WORKER_QUEUES")),
    )


def parse_queues(text: str | None) -> tuple[str, ...]:
    """The queue names of a comma-separated list (None or empty: `defaults.WORKER_QUEUES`)."""
    if not text or not text.strip():
        return defaults.WORKER_QUEUES
    return tuple(name.strip() for name in text.split(",") if name.strip())


def to_env(config: ServiceConfig) -> dict[str, str]:
    """The environment variables that reproduce `config` in a child process."""
    pairs = {
        "EXPAUDIT_STORE": config.store,
        "EXPAUDIT_S3_ENDPOINT": config.s3_endpoint,
        "EXPAUDIT_S3_REGION": config.s3_region,
        "AWS_ACCESS_KEY_ID": config.s3_access_key,
        "AWS_SECRET_ACCESS_KEY": config.s3_secret_key,
        "EXPAUDIT_REDIS_URL": config.redis_url,
        "EXPAUDIT_ADMIN_TOKEN": config.admin_token,
        "EXPAUDIT_MAX_UPLOAD_BYTES": str(config.max_upload_bytes),
        "EXPAUDIT_RATE_LIMIT_PER_MINUTE": str(config.rate_limit_per_minute),
        "EXPAUDIT_MAX_ACTIVE_SUBMISSIONS": str(config.max_active_submissions),
        "EXPAUDIT_TRUSTED_PROXIES": str(config.trusted_proxies),
        "EXPAUDIT_PUBLIC_URL": config.public_url,
        "EXPAUDIT_N_SHUFFLES": None if config.n_shuffles is None else str(config.n_shuffles),
        "EXPAUDIT_N_BOOTSTRAP": None if config.n_bootstrap is None else str(config.n_bootstrap),
        "EXPAUDIT_CATALOG": config.catalog,
        "EXPAUDIT_FROZEN_ROOT": config.frozen_root,
        "EXPAUDIT_CELLS_DIR": config.cells_dir,
        "EXPAUDIT_SANDBOX": config.sandbox,
        "EXPAUDIT_SELECTOR_WALL_SECONDS": str(config.selector_wall_seconds),
        "EXPAUDIT_SEALED_SUBMISSIONS_PER_DAY": str(config.sealed_submissions_per_day),
        "EXPAUDIT_WORKER_QUEUES": ",".join(config.worker_queues),
    }
    return {k: v for k, v in pairs.items() if v is not None}


def computed_cells_dir(config: ServiceConfig) -> Path:
    """Where the runners append the cells they compute, and web and workers read them.

    `config.cells_dir` (EXPAUDIT_CELLS_DIR) when set; else `cells` beside a local store
    (`var/cells` beside the default `var/store`: the data directory holds the whole state
    of a running service), else `defaults.LOCAL_CELLS_DIR`. Never the frozen root, which
    may be inside the installed package (readable by every local-sandbox selector) or a
    source checkout. Relative paths are relative to the working directory, like the store's.
    """
    if config.cells_dir:
        return Path(config.cells_dir)
    if not config.is_s3:
        return Path(config.store).parent / defaults.CELLS_DIR_NAME
    return Path(defaults.LOCAL_CELLS_DIR)


def protected_paths(config: ServiceConfig) -> tuple[Protected, ...]:
    """The host paths no selector may be given a view of (`sandbox.base.Protected`),
    passed to the local sandbox, which refuses a run that would expose one: the computed
    cells, a local store, a Redis unix socket, and any cells of a sealed query set in the
    frozen root (never published; left there by a service older than EXPAUDIT_CELLS_DIR).

    The published frozen data itself is public (it is shipped in the package, and a
    wheel's copy lies inside the interpreter every selector runs with), so only those
    files of it count.
    """
    out = [Protected(os.path.abspath(computed_cells_dir(config)), "the computed cells")]
    if not config.is_s3:
        out.append(Protected(os.path.abspath(config.store), "the submission store"))
    socket = redis_socket(config.redis_url)
    if socket is not None:
        out.append(Protected(os.path.abspath(socket), "the Redis socket"))
    if config.catalog is None:
        out += [Protected(str(path.absolute()), "the sealed cells in the frozen data",
                          if_present=True) for path in sealed_cells_files(config.frozen_root)]
    return tuple(out)


def redis_socket(url: str | None) -> str | None:
    """The unix socket path of a `unix://` Redis URL; None for a TCP one (or none)."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme != "unix":
        return None
    return parts.path or None
