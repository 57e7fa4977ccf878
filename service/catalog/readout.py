"""The readout settings the service serves: one per task and bank version (docs/readout.md).

A readout setting is a bank of the frozen data (`<root>/readout/<task>-<version>/`, read by
`benchmark_data.readout_banks`): its observations are public, the labels of `confirm` and
`eval` are in the sealed directory (`EXPAUDIT_READOUT_SEALED`, default `var/readout_sealed/`
of the source tree) and never leave the server. A setting is listed when its bank is
there; it takes submissions when its sealed labels are there too and match the bank's
`sealed_labels_sha256` (else `DataUnavailable`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from benchmark_data.readout_banks import BANK_VERSION, BANKS, TASKS, bank_dir, sealed_dir, sealed_labels_path
from leaderboard.readout.bank import Bank, read_bank
from service.catalog.catalog import BenchmarkCatalog, DataUnavailable, UnknownSetting

log = logging.getLogger(__name__)

KIND = "readout"
"""The `kind` of a readout setting in `GET /settings` (the others are `retrieval`)."""

PUBLIC_LABEL_SPLITS = ("train", "dev")
"""The only splits whose labels are served (docs/readout.md): `confirm` and `eval` are sealed."""

FILES_ROUTE = "files"
"""Route of a bank file under ``/api/v1/settings/<setting_id>/``: ``files/<name>``."""


@dataclass(frozen=True)
class ReadoutDownload:
    """One public file of a readout bank, served as it is.

    Attributes:
        key: its name in the setting document's `downloads`.
        file: its name in the bank directory (and in the route).
        holds: what it holds, in one sentence.
    """

    key: str
    file: str
    holds: str

    @property
    def route(self) -> str:
        return f"{FILES_ROUTE}/{self.file}"

    def file_name(self, setting_id: str) -> str:
        """``<setting_id>-<file>``: the name it is served under."""
        return f"{setting_id}-{self.file}"


VERSION_NOTES = {
    "v1": ("; natural observations are the expert's frames only, and the repository's history reveals "
           "this version's confirm split (docs/readout.md): a development yardstick, not a held-out test"),
    "v2": "; natural observations are the expert's and the published image policies' frames",
}
"""What a reader must know of a bank version, appended to its setting's description."""


def setting_id(task: str, version: str = BANK_VERSION) -> str:
    return f"{task}-readout-{version}"


@dataclass(frozen=True)
class ReadoutSetting:
    """One task's bank as a setting: where its files are and what `GET /settings` says of it."""

    id: str
    task: str
    version: str
    bank: Path
    sealed_labels: Path

    def info(self) -> dict:
        return json.loads((self.bank / "bank.json").read_text(encoding="utf-8"))

    def public_dict(self) -> dict:
        info = self.info()
        return {"id": self.id, "kind": KIND, "task": self.task, "version": self.version,
                "coordinate": info.get("coordinate"), "unit": info.get("unit"),
                "sealed": True, "audited_split": "confirm",
                "initializations": info.get("initializations"), "observations": info.get("counts"),
                "inputs": ["features", "predictions"],
                "description": (f"Readout audit of the {self.task} bank {self.version}: a representation's "
                                f"fitted readout of the {info.get('coordinate')} on the confirm "
                                "initializations (labels sealed)" + VERSION_NOTES.get(self.version, ""))}


class ReadoutCatalog:
    """The readout settings under a frozen root (None: the package's), with their sealed
    labels in `sealed` (None: `benchmark_data.readout_banks.sealed_dir()`)."""

    def __init__(self, root: str | Path | None = None, sealed: str | Path | None = None,
                 enabled: bool = True) -> None:
        self.root = None if root is None else Path(root)
        self.sealed = Path(sealed) if sealed is not None else sealed_dir()
        self.enabled = enabled

    def list_settings(self) -> list[ReadoutSetting]:
        out = []
        if not self.enabled:
            return out
        for version in BANKS:
            for task in TASKS:
                bank = bank_dir(task, self.root, version)
                if (bank / "bank.json").is_file():
                    out.append(ReadoutSetting(setting_id(task, version), task, version, bank,
                                              sealed_labels_path(task, self.sealed, version)))
        return out

    def is_readout(self, sid: str) -> bool:
        return any(s.id == sid for s in self.list_settings())

    def get_setting(self, sid: str, field: str = "setting_id") -> ReadoutSetting:
        for setting in self.list_settings():
            if setting.id == sid:
                return setting
        raise UnknownSetting(sid, field)

    def observations(self, sid: str) -> pd.DataFrame:
        """The bank's public observation table (`observation_id`, `split`, `kind`, `shard`, ...)."""
        path = self.get_setting(sid).bank / "observations.parquet"
        return _observations(str(path), _signature(path))

    def check_sealed(self, sid: str) -> Path:
        """The sealed labels file of `sid`, present and matching `bank.json`; else `DataUnavailable`."""
        setting = self.get_setting(sid)
        path = setting.sealed_labels
        if not path.is_file():
            raise DataUnavailable(sid, "its sealed confirm labels are not installed on this server")
        expected = setting.info().get("sealed_labels_sha256")
        if expected is not None and _sha256(str(path), _signature(path)) != expected:
            raise DataUnavailable(sid, "its sealed labels differ from the bank's sealed_labels_sha256")
        return path

    def downloads(self, sid: str) -> list[ReadoutDownload]:
        """The bank's public files: its observation table, the public (train and dev) labels
        and every image shard present; the labels only while they hold no sealed split."""
        setting = self.get_setting(sid)
        out = [ReadoutDownload("observations", "observations.parquet",
                               "Every observation of the bank: observation_id, split, initialization, "
                               "kind (natural or controlled), and the image shard and row holding it")]
        labels = setting.bank / "labels.parquet"
        if labels.is_file() and public_labels(labels):
            out.append(ReadoutDownload("labels", "labels.parquet",
                                       "The coordinate of every train and dev observation (the confirm "
                                       "and eval labels are sealed) with the grid, context and "
                                       "validation columns"))
        shards = sorted(setting.info().get("shards") or {})
        for name in shards:
            if (setting.bank / name).is_file():
                out.append(ReadoutDownload(Path(name).stem, name,
                                           f"NPZ of observation_id and the 64x64 RGB agentview and wrist "
                                           f"images of the observations in shard {name}"))
        return out

    def download(self, sid: str, name: str) -> tuple[ReadoutDownload, Path] | None:
        """The download of `sid` whose bank file is `name`, with its path; None when the bank
        offers no such file (only the listed names are ever opened)."""
        for download in self.downloads(sid):
            if download.file == name:
                return download, self.get_setting(sid).bank / download.file
        return None

    def bank(self, sid: str) -> Bank:
        """The engine's bank with the sealed labels read (for the audit; never served)."""
        path = self.check_sealed(sid)
        bank = self.get_setting(sid).bank
        return _bank(str(bank), str(path), _signature(bank / "labels.parquet"), _signature(path))


def public_labels(path: Path) -> bool:
    """Whether a labels file holds rows of the public splits alone (`PUBLIC_LABEL_SPLITS`); one
    holding a sealed split's row is never offered (and the operator is told)."""
    sealed = sorted(set(_label_splits(str(path), _signature(path))) - set(PUBLIC_LABEL_SPLITS))
    if sealed:
        log.error("%s holds rows of the sealed split(s) %s: not offered for download", path, sealed)
    return not sealed


@lru_cache(maxsize=8)
def _label_splits(path: str, signature: tuple) -> tuple[str, ...]:
    return tuple(pd.read_parquet(path, columns=["split"])["split"].astype(str).unique())


def _signature(path: Path) -> tuple:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


@lru_cache(maxsize=8)
def _observations(path: str, signature: tuple) -> pd.DataFrame:
    return pd.read_parquet(path)


@lru_cache(maxsize=8)
def _sha256(path: str, signature: tuple) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@lru_cache(maxsize=4)
def _bank(directory: str, sealed: str, labels_signature: tuple, sealed_signature: tuple) -> Bank:
    return read_bank(directory, sealed_labels=sealed)


@lru_cache(maxsize=4)
def _catalog(root: str | None, sealed: str | None, enabled: bool) -> ReadoutCatalog:
    return ReadoutCatalog(root, sealed, enabled)


def open_readout_catalog(config, catalog=None, sealed: str | Path | None = None) -> ReadoutCatalog:
    """The readout settings of a `ServiceConfig`: the banks under its frozen root, the sealed
    labels in `sealed` (None: the sealed directory, `EXPAUDIT_READOUT_SEALED`).

    Served beside the benchmark's own settings (`catalog` None or a `BenchmarkCatalog`), or
    beside any catalog when the configuration names a frozen root (`EXPAUDIT_FROZEN_ROOT`);
    a lab's own catalog of matrices alone has none.
    """
    enabled = config.frozen_root is not None or catalog is None or isinstance(catalog, BenchmarkCatalog)
    return _catalog(config.frozen_root, str(sealed if sealed is not None else sealed_dir()), enabled)
