"""The catalog: the settings the service knows and their transfer data.

A small interface over `benchmark_data` so the service (and its tests) can
run on any set of settings: `BenchmarkCatalog` wraps the frozen benchmark,
`StaticCatalog` holds settings given in memory (a lab's own matrices, or the
small synthetic settings of the tests).
"""

from __future__ import annotations

import abc
import hashlib
import json
import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from benchmark_data.frozen import load_transfer
from benchmark_data.image_archive import query_images_path
from benchmark_data.paths import (cells_journal, cells_table, computed_journal, library_dir,
                                  query_set_dir)
from benchmark_data.policy_files import failed_gates, is_trained
from benchmark_data.query_sets import read_scenes
from benchmark_data.registry import N_SEEDS, SETTINGS, Mechanism, Setting, UnknownSettingError, get_setting
from expaudit.errors import DataNotFound, UserError
from leaderboard.io import parse_experiences, parse_outcomes, parse_scenes, read_table
from leaderboard.matrix import MISSING, TransferData
from leaderboard.outcomes_fast import fast_outcomes
from service.process import computed_cells_dir
from service.store import FoldResult, StoreCells, fold_locked, open_store
from service.catalog.downloads import experiences_frame, outcomes_frame, scenes_frame
from service.catalog.selector_input import prepare_setting_input, takes_selectors

log = logging.getLogger(__name__)


class DataUnavailable(DataNotFound, LookupError):
    """The setting exists but its frozen data has not been built on this installation."""

    def __init__(self, setting_id: str, detail: str) -> None:
        self.setting_id = setting_id
        super().__init__(f"the data of setting '{setting_id}' is not available here: {detail}")


class SelectorsUnsupported(UserError, LookupError):
    """The setting has no frozen scenes and library a selector could read."""

    def __init__(self, setting_id: str) -> None:
        self.setting_id = setting_id
        super().__init__(f"setting '{setting_id}' takes scores files only: it has no frozen "
                         "images and library to build a selector's /input from")


class UnknownSetting(UnknownSettingError):
    """No setting with this id (the registry's error, so one `except` catches both);
    `field` is the request field that named it."""

    def __init__(self, setting_id: str, field: str = "setting_id") -> None:
        self.setting_id = setting_id
        self.field = field
        super().__init__(setting_id)

    def __str__(self) -> str:
        return f"unknown setting '{self.setting_id}'"


@dataclass(frozen=True)
class Completeness:
    """How much of the outcome tensor is executed."""

    cells_done: int
    cells_total: int
    seeds_complete: tuple[int, ...] = ()
    """Seeds whose K x Q slice is fully executed (policy settings are filled seed by seed)."""

    @property
    def complete(self) -> bool:
        return self.cells_done == self.cells_total

    def to_dict(self) -> dict:
        share = self.cells_done / self.cells_total if self.cells_total else 0.0
        return {"cells_done": self.cells_done, "cells_total": self.cells_total,
                "complete": self.complete, "share": round(share, 6),
                "seeds_complete": list(self.seeds_complete)}


def completeness_of(data: TransferData) -> Completeness:
    done_by_seed = (data.outcomes != MISSING).reshape(-1, data.outcomes.shape[-1]).all(axis=0)
    return Completeness(int((data.outcomes != MISSING).sum()), int(data.outcomes.size),
                        tuple(int(s) for s in np.flatnonzero(done_by_seed)))


def fingerprint(data: TransferData) -> str:
    """SHA-256 over ids, scene table and outcomes: names cached downloads and baselines."""
    digest = hashlib.sha256()
    digest.update("\n".join(data.experience_ids).encode())
    digest.update(b"\0" + "\n".join(data.scenes.scene_ids).encode())
    for array in (data.scenes.state_ids, data.scenes.layout_level, data.scenes.appearance_draw):
        digest.update(b"\0" + np.asarray(array).astype(str).tobytes())
    digest.update(b"\0" + np.ascontiguousarray(data.outcomes, dtype=np.int8).tobytes())
    return digest.hexdigest()


class Catalog(abc.ABC):
    """The settings the service serves."""

    @abc.abstractmethod
    def list_settings(self) -> list[Setting]:
        """Every setting, in publication order."""

    def get_setting(self, setting_id: str, field: str = "setting_id") -> Setting:
        """The setting; `UnknownSetting` names `field`, the request field that gave the id."""
        for setting in self.list_settings():
            if setting.id == setting_id:
                return setting
        raise UnknownSetting(setting_id, field)

    @abc.abstractmethod
    def load_transfer(self, setting_id: str) -> TransferData:
        """The setting's transfer data (MISSING where not executed)."""

    def completeness(self, setting_id: str) -> Completeness:
        return completeness_of(self.load_transfer(setting_id))

    def archive_path(self, setting_id: str, kind: str) -> Path | None:
        """A downloadable archive (`images`, `library`) of the setting, if frozen."""
        self.get_setting(setting_id)
        return None

    def supports_selectors(self, setting_id: str) -> bool:
        """True when a submitted selector can be run on this setting (its /input can be built)."""
        self.get_setting(setting_id)
        return False

    def selector_input(self, setting_id: str, directory: Path):
        """Write the setting's selector /input tree into `directory`; returns the sandbox protocol's `SettingInfo`."""
        raise SelectorsUnsupported(setting_id)

    def fillable(self, setting_id: str) -> bool:
        """True when missing cells of this setting can be computed by the runners."""
        self.get_setting(setting_id)
        return False

    def fold_computed(self, setting_id: str, redis) -> FoldResult | None:
        """Fold the cells runners computed for this setting (none here: nothing to fold)."""
        self.get_setting(setting_id)
        return None

    def policy_gates_failed(self, setting_id: str) -> tuple[str, ...]:
        """The gates the setting's policies failed before it was generated, one line each
        (`benchmark_data.policy_files.failed_gates`); none where the catalog holds no policies."""
        self.get_setting(setting_id)
        return ()

    def pair_ids(self, setting_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(experience ids, scene ids) of a setting, for sizing its uploads without its outcomes."""
        data = self.load_transfer(setting_id)
        return tuple(data.experience_ids), tuple(data.scenes.scene_ids)


class StaticCatalog(Catalog):
    """Settings held in memory: `{setting: transfer data}`."""

    def __init__(self, settings: dict[Setting, TransferData],
                 archives: dict[tuple[str, str], Path] | None = None) -> None:
        self._settings = list(settings)
        self._data = {s.id: d for s, d in settings.items()}
        self._archives = dict(archives or {})

    def list_settings(self) -> list[Setting]:
        return list(self._settings)

    def load_transfer(self, setting_id: str) -> TransferData:
        try:
            return self._data[setting_id]
        except KeyError:
            raise UnknownSetting(setting_id) from None

    def archive_path(self, setting_id: str, kind: str) -> Path | None:
        self.get_setting(setting_id)
        return self._archives.get((setting_id, kind))


class BenchmarkCatalog(Catalog):
    """The benchmark's own settings (`benchmark_data.registry`) and frozen data.

    Settings whose query set or library has not been generated on this
    installation are listed with zero cells done; loading their data raises
    `DataUnavailable`.

    Args:
        root: the published frozen data directory; None is the one shipped in
            the package. Only read.
        cells_dir: the computed-cells directory runners once appended to
            (`service.process.config.computed_cells_dir`), read only: its cells are read
            with the published ones. None: none.
        computed: the cells runners compute, in the object store
            (`service.store.computed_cells.StoreCells`). None: none.
    """

    N_SCENES = 200
    """40 states x 5 appearance draws per query set (BENCHMARK.md)."""

    def __init__(self, root: str | Path | None = None, cells_dir: str | Path | None = None,
                 computed: StoreCells | None = None) -> None:
        self.root = None if root is None else Path(root)
        self.cells_dir = None if cells_dir is None else Path(cells_dir)
        self.computed = computed

    def list_settings(self) -> list[Setting]:
        return list(SETTINGS.values())

    def load_transfer(self, setting_id: str) -> TransferData:
        self.get_setting(setting_id)
        try:
            return _load_frozen(setting_id, None if self.root is None else str(self.root),
                                None if self.cells_dir is None else str(self.cells_dir),
                                self.computed,
                                _cells_signature(setting_id, self.root, self.cells_dir,
                                                 self.computed))
        except FileNotFoundError as exc:
            log.info("setting %s: frozen data missing (%s)", setting_id, exc)
            raise DataUnavailable(setting_id, "its frozen data has not been generated "
                                  "(`expaudit data generate`)") from None

    def pair_ids(self, setting_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The registry's experience ids and the query set's scene ids: no outcomes are read
        (sizing the uploads at every web start would otherwise load every setting's tensor)."""
        self.get_setting(setting_id)
        setting = get_setting(setting_id)
        try:
            scenes = read_scenes(setting.query_set, self.root)
        except FileNotFoundError as exc:
            log.info("setting %s: frozen scenes missing (%s)", setting_id, exc)
            raise DataUnavailable(setting_id, "its frozen data has not been generated "
                                  "(`expaudit data generate`)") from None
        return tuple(setting.experience_ids), tuple(scenes["scene_id"])

    def completeness(self, setting_id: str) -> Completeness:
        setting = self.get_setting(setting_id)
        try:
            return completeness_of(self.load_transfer(setting_id))
        except DataUnavailable:
            return Completeness(0, setting.k * self.N_SCENES * N_SEEDS)

    def archive_path(self, setting_id: str, kind: str) -> Path | None:
        self.get_setting(setting_id)
        setting = get_setting(setting_id)
        if kind == "images":
            path = query_images_path(setting.query_set, self.root)
        elif kind == "library":
            path = library_dir(setting.library_id, self.root) / "demos.hdf5"
        else:
            return None
        return path if path.is_file() else None

    def supports_selectors(self, setting_id: str) -> bool:
        self.get_setting(setting_id)
        return takes_selectors(setting_id)

    def selector_input(self, setting_id: str, directory: Path):
        self.get_setting(setting_id)
        return prepare_setting_input(directory, setting_id, self.root)

    def fillable(self, setting_id: str) -> bool:
        self.get_setting(setting_id)
        setting = get_setting(setting_id)
        if setting.mechanism in (Mechanism.POLICY, Mechanism.POLICY_DR):
            return all(is_trained(setting.mechanism.value, e, self.root) for e in setting.experience_ids)
        return setting.mechanism is Mechanism.REPLAY and setting.task == "stack"

    def policy_gates_failed(self, setting_id: str) -> tuple[str, ...]:
        """The failed gates of the setting's policies under this catalog's data root."""
        return failed_gates(self.get_setting(setting_id), self.root)

    def fold_computed(self, setting_id: str, redis) -> FoldResult | None:
        """Fold the setting's computed cells in the store into one table, under the fold
        lock (`service.store.computed_cells.fold_locked`); None when there is nothing to
        fold or another process is folding."""
        self.get_setting(setting_id)
        if self.computed is None:
            return None
        setting = get_setting(setting_id)
        return fold_locked(self.computed, redis, setting.mechanism_id, setting.query_set)


def open_catalog(config) -> Catalog:
    """The catalog named by `config.catalog` (a `ServiceConfig`): a directory of settings, or
    the benchmark's published frozen data with the cells the runners computed
    (`computed_cells_dir`)."""
    if config.catalog:
        return DirectoryCatalog(config.catalog)
    return BenchmarkCatalog(config.frozen_root, computed_cells_dir(config),
                            StoreCells(open_store(config)))


def _cells_signature(setting_id: str, root: Path | None, cells_dir: Path | None = None,
                     computed: StoreCells | None = None) -> tuple:
    """(size, mtime) of every file a setting's tensor is read from, and the objects of its
    computed cells in the store.

    Cells are appended while the service runs (runners filling a sealed
    matrix, a generation run in progress), so a cached tensor is reused only
    while none of its files changed.
    """
    setting = get_setting(setting_id)
    mechanism = setting.mechanism_id
    paths = (cells_table(mechanism, setting.query_set, root),
             cells_journal(mechanism, setting.query_set, root),
             query_set_dir(setting.query_set, root) / "scenes.parquet",
             library_dir(setting.library_id, root) / "experiences.parquet")
    if cells_dir is not None:
        paths += (computed_journal(mechanism, setting.query_set, cells_dir),)
    out = []
    for path in paths:
        try:
            stat = path.stat()
        except FileNotFoundError:
            out.append(None)
            continue
        out.append((stat.st_size, stat.st_mtime_ns))
    if computed is not None:
        out.append(computed.signature(mechanism, setting.query_set))
    return tuple(out)


@lru_cache(maxsize=32)
def _load_frozen(setting_id: str, root: str | None, cells_dir: str | None,
                 computed: StoreCells | None, signature: tuple) -> TransferData:
    """One load per (setting, root, computed cells, state of their files): `signature`
    changes when cells land."""
    return load_transfer(setting_id, root, (cells_dir, computed))


SETTING_FILES = ("setting.json", "experiences.csv", "scenes.csv", "outcomes.csv")
"""Files of one setting in a `DirectoryCatalog` (CSV as `expaudit audit` reads them)."""


class DirectoryCatalog(Catalog):
    """Settings stored as files: ``<root>/<setting_id>/{setting.json, experiences.csv,
    scenes.csv, outcomes.csv}``.

    Lets a lab serve its own matrices (and the tests run the real service
    processes on a small setting). `setting.json` holds task, mechanism,
    query_set, sealed and description; the tables are read and validated by
    `leaderboard.io`, so a bad file is reported with its name, line and field.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def list_settings(self) -> list[Setting]:
        out = []
        for directory in sorted(p for p in self.root.iterdir() if (p / "setting.json").is_file()):
            meta = json.loads((directory / "setting.json").read_text())
            k = len((directory / "experiences.csv").read_text().strip().splitlines()) - 1
            out.append(Setting(id=directory.name, task=meta["task"], mechanism=meta["mechanism"], k=k,
                               query_set=meta["query_set"], sealed=bool(meta.get("sealed", False)),
                               description=meta.get("description", "")))
        return out

    def load_transfer(self, setting_id: str) -> TransferData:
        self.get_setting(setting_id)
        return _load_directory(str(self.root / setting_id))

    def pair_ids(self, setting_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Read from the experiences and scenes files only (a lab's outcomes file can be 10^7 rows)."""
        self.get_setting(setting_id)
        d = self.root / setting_id
        experiences = parse_experiences(read_table(d / "experiences.csv"), source=str(d / "experiences.csv"))
        return experiences, parse_scenes(read_table(d / "scenes.csv"), source=str(d / "scenes.csv")).scene_ids


@lru_cache(maxsize=32)
def _load_directory(directory: str) -> TransferData:
    d = Path(directory)
    experience_ids = parse_experiences(read_table(d / "experiences.csv"), source=str(d / "experiences.csv"))
    scenes = parse_scenes(read_table(d / "scenes.csv"), source=str(d / "scenes.csv"))
    outcomes = fast_outcomes(d / "outcomes.csv", experience_ids, scenes.scene_ids)  # None: not the simple case
    if outcomes is None:
        outcomes = parse_outcomes(read_table(d / "outcomes.csv"), experience_ids, scenes.scene_ids,
                                  source=str(d / "outcomes.csv"))
    return TransferData(experience_ids, scenes, outcomes)


def export_setting(root: str | Path, setting: Setting, data: TransferData) -> Path:
    """Write one setting in the `DirectoryCatalog` layout; returns its directory."""
    directory = Path(root) / setting.id
    directory.mkdir(parents=True, exist_ok=True)
    meta = {"task": setting.task, "mechanism": setting.mechanism_id, "query_set": setting.query_set,
            "sealed": setting.sealed, "description": setting.description}
    (directory / "setting.json").write_text(json.dumps(meta, indent=1))
    experiences_frame(data).to_csv(directory / "experiences.csv", index=False)
    scenes_frame(data).to_csv(directory / "scenes.csv", index=False)
    outcomes_frame(data).to_csv(directory / "outcomes.csv", index=False)
    return directory
