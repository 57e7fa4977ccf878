"""Versions of the published data: the current one, and each earlier one kept by its version.

`DATA_VERSION` is the release of the frozen data (downloads and the dataset card name it). A
release that changes published files keeps the files it replaced under
`versions/<earlier version>/` of the frozen root, in the same layout, with `version.json`
naming the settings they belong to; a setting not named there reads the same files in both
versions. `load_transfer_at` and `query_images_at` give a setting's data as of a version, so
results computed on an earlier release stay reproducible (docs/changelog.md lists releases).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmark_data.frozen import load_transfer
from benchmark_data.image_archive import query_images_path
from benchmark_data.paths import root_or_default
from benchmark_data.registry import get_setting
from expaudit.errors import UnknownName
from leaderboard.matrix import TransferData

DATA_VERSION = "0.3.0"
"""The release of the frozen data (0.3.0: readout bank version 2 added; 0.2.0: the Door query states' ajar door made valid)."""
VERSIONS_DIR = "versions"
VERSION_RECORD = "version.json"


class UnknownDataVersion(UnknownName, KeyError):
    """A data version that is neither the current one nor kept under the frozen root."""

    def __str__(self) -> str:
        return str(self.args[0])


def version_root(version: str, root=None) -> Path:
    """`versions/<version>/` under the frozen root: the files `version` had that a later release
    replaced."""
    return root_or_default(root) / VERSIONS_DIR / version


def known_versions(root=None) -> list[str]:
    """Every data version served from `root`: the kept earlier ones, then the current one."""
    kept = sorted(p.parent.name for p in (root_or_default(root) / VERSIONS_DIR).glob(f"*/{VERSION_RECORD}"))
    return [*kept, DATA_VERSION]


def version_record(version: str, root=None) -> dict:
    """The `version.json` of a kept version (its settings, files, successor and why)."""
    path = version_root(version, root) / VERSION_RECORD
    if version == DATA_VERSION or not path.exists():
        raise UnknownDataVersion(f"data_version must be one of {known_versions(root)} "
                                 f"(a kept earlier one), got {version!r}")
    return json.loads(path.read_text())


def check_version(version: str | None, root=None) -> str:
    """`version` (None: the current one), refused with `UnknownDataVersion` when not served."""
    if version is None or version == DATA_VERSION:
        return DATA_VERSION
    version_record(version, root)
    return version


def _changed(setting_id: str, version: str, root) -> bool:
    return version != DATA_VERSION and setting_id in version_record(version, root)["settings"]


def load_transfer_at(setting_id: str, version: str | None = None, root=None) -> TransferData:
    """The outcome tensor of a setting as of data `version` (None: the current one): its scenes
    and cells from the kept files where the version changed the setting, its library from `root`."""
    version = check_version(version, root)
    if not _changed(get_setting(setting_id).id, version, root):
        return load_transfer(setting_id, root)
    return load_transfer(setting_id, version_root(version, root), library_root=root_or_default(root))


def query_images_at(setting_id: str, version: str | None = None, root=None) -> Path:
    """The image archive of a setting's query set as of data `version` (None: the current one)."""
    version = check_version(version, root)
    query_set = get_setting(setting_id).query_set
    if not _changed(setting_id, version, root):
        return query_images_path(query_set, root)
    return query_images_path(query_set, version_root(version, root))
