"""The files a setting is downloaded as: what each holds, its name, what it says about itself.

`DOWNLOADS` is the one list of a setting's downloads: the setting document of
the API (`downloads`), the setting pages of the published site and the service
routes all read it. Every file name starts with the setting id, so a folder
of downloads from several settings stays legible. The tables in Parquet carry
their setting, data version and licence in the file's key-value metadata
(`describe`); the library archive holds the setting's K experiences only (cut
from the recording stream by `library_archive`) and carries the same
description in its root attributes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchmark_data.registry import Setting
from benchmark_data.versions import DATA_VERSION
from expaudit.errors import DataNotFound, UnknownName

DOWNLOAD_FORMAT_VERSION = "2"
"""Version of the downloads' bytes for one data version: part of their cache keys, so a
change in what a file says about itself (2: Parquet metadata, the library cut to K) is
served at once instead of the bytes cached before it."""

LICENSE = "MIT"
"""The project's licence (pyproject.toml), under which the generated data is released."""

CITATION = ("Beyond End-Task Success: How to Audit Visual Experience Retrieval in Robotics "
            "(arXiv:2609.26567). Benchmark data: expaudit frozen release.")
"""How to cite the data (the dataset card's `citeAs` says the same)."""

METADATA_PREFIX = "expaudit."
"""Prefix of the keys a download adds to its metadata (Parquet key-value metadata, HDF5
root attributes), beside those its format writes itself (`pandas`, `ARROW:schema`)."""


class UnknownDownloadName(UnknownName, KeyError):
    """A download key that is not in `DOWNLOADS`."""

    def __str__(self) -> str:  # KeyError's default repr-quotes the message
        return str(self.args[0])


@dataclass(frozen=True)
class Download:
    """One download of a setting.

    Attributes:
        key: its name in the setting document's `downloads`.
        route: its path under ``/api/v1/settings/<setting_id>/``.
        formats: the formats offered, the default first; empty for a single file.
        stem: the file name after the setting id (``<setting_id>-<stem>.<format>``).
        suffix: the file's extension when there is one format.
        holds: what the file holds, in one sentence.
        reads_outcomes: True where the file holds outcomes: never offered on a sealed setting.
        needs_input_tree: True where the file is built from the selector /input tree.
    """

    key: str
    route: str
    formats: tuple[str, ...]
    stem: str
    suffix: str
    holds: str
    reads_outcomes: bool = False
    needs_input_tree: bool = False

    def file_name(self, setting_id: str, fmt: str | None = None) -> str:
        """``<setting_id>-<stem>.<format>``: the name the file is served under."""
        extension = (fmt or self.formats[0]) if self.formats else self.suffix
        return f"{setting_id}-{self.stem}.{extension}"

    def path(self, setting_id: str, fmt: str | None = None) -> str:
        """The route under the API prefix, with ``?format=`` when the download has formats."""
        route = f"settings/{setting_id}/{self.route}"
        return f"{route}?format={fmt or self.formats[0]}" if self.formats else route


DOWNLOADS: dict[str, Download] = {d.key: d for d in (
    Download("outcomes", "outcomes", ("parquet", "csv", "npz"), "outcomes", "",
             "One row per executed cell: experience_id, scene_id, seed, success (the input of "
             "expaudit audit); NPZ: the int8 tensor (K, Q, S; -1 = not executed) and the ids",
             reads_outcomes=True),
    Download("scenes", "scenes", ("csv", "parquet", "json"), "scenes", "",
             "The query scenes in published order: scene_id, state_id, layout_level, "
             "appearance_draw"),
    Download("experiences", "experiences", ("csv", "parquet", "json"), "experiences", "",
             "The library's experience ids in library order"),
    Download("query_images", "archives/images", (), "query-images", "tar",
             "The agent-view PNG of every query scene, named <scene_id>.png"),
    Download("library", "archives/library", (), "library-demos", "hdf5",
             "The setting's K recorded demonstrations (robomimic-style HDF5: states, actions, "
             "observations, the recorded target path)"),
    Download("base_images", "base-images", (), "base_images", "tar",
             "The base-scene PNG of every experience of the library, named <experience_id>.png",
             needs_input_tree=True),
    Download("trajectories", "trajectories", (), "trajectories", "json",
             "Every experience's recorded target path (x, y, z, yaw, grip, phase)",
             needs_input_tree=True),
    Download("selector_input", "selector-input", (), "input", "tar.gz",
             "The exact /input tree a selector submission on the setting is given",
             needs_input_tree=True),
)}
"""Every download a setting can have, in the order documents list them."""


def offered(setting: Setting, input_tree: bool) -> list[Download]:
    """The downloads of `setting`: no outcomes for a sealed one, the /input tree's files only
    where the tree can be built (`input_tree`)."""
    return [d for d in DOWNLOADS.values()
            if not (d.reads_outcomes and setting.sealed)
            and not (d.needs_input_tree and not input_tree)]


def data_version() -> str:
    """The release of the frozen data (`benchmark_data.versions.DATA_VERSION`, the Croissant
    card's `version`): its own version, bumped when published files change."""
    return DATA_VERSION


def describe(setting: Setting, download: str, fingerprint: str | None = None,
             version: str | None = None) -> dict[str, str]:
    """What a downloaded file says about itself (keys prefixed `METADATA_PREFIX`).

    Args:
        setting: the setting the file belongs to.
        download: its key in `DOWNLOADS` (names the table: outcomes, scenes, ...).
        fingerprint: the content hash of the setting's data, when the caller knows it.
        version: the data version the file is of (default the current one).
    """
    if download not in DOWNLOADS:
        raise UnknownDownloadName(f"download must be one of {sorted(DOWNLOADS)}, "
                                  f"got {download!r}")
    fields = {"setting_id": setting.id, "download": download,
              "holds": DOWNLOADS[download].holds, "task": setting.task,
              "mechanism": str(getattr(setting.mechanism, "value", setting.mechanism)),
              "k": str(setting.k), "query_set": setting.query_set,
              "data_version": version or data_version(), "license": LICENSE, "cite_as": CITATION}
    if fingerprint:
        fields["data_fingerprint"] = fingerprint
    return {METADATA_PREFIX + name: value for name, value in fields.items()}


def parquet_bytes(frame, metadata: Mapping[str, str]) -> bytes:
    """`frame` (a pandas DataFrame, no index) as Parquet with `metadata` in its key-value
    metadata, beside pandas' own."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    merged = {**(table.schema.metadata or {}),
              **{k.encode(): v.encode() for k, v in metadata.items()}}
    buffer = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(merged), buffer)
    return buffer.getvalue()


def parquet_description(data: bytes | Path) -> dict[str, str]:
    """The `METADATA_PREFIX` keys of a Parquet file's key-value metadata."""
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    metadata = pq.read_schema(source).metadata or {}
    return {k.decode(): v.decode() for k, v in metadata.items()
            if k.decode().startswith(METADATA_PREFIX)}


class LibraryArchiveUnavailable(DataNotFound):
    """The library archive cannot be cut here (h5py, of the `sim` extra, is not installed)."""


def library_archive(setting: Setting, stream: str | Path,
                    metadata: Mapping[str, str]) -> bytes:
    """The setting's K demonstrations, cut from the stream's HDF5, in library order.

    Every ``data/<demo>`` group whose `experience_id` attribute is in the setting's
    library is copied as it is (its attributes and datasets unchanged), `data`'s
    attributes are kept with `total` recounted, and `metadata` becomes the file's
    root attributes.

    Raises:
        DataNotFound: the stream lacks one of the setting's experiences.
        LibraryArchiveUnavailable: h5py is not installed.
    """
    try:
        import h5py
    except ImportError:
        raise LibraryArchiveUnavailable(
            "cutting a setting's library from its stream needs h5py: pip install "
            "'expaudit[sim]'") from None
    buffer = io.BytesIO()
    with h5py.File(stream, "r") as source, h5py.File(buffer, "w", track_order=True) as out:
        demos = {source["data"][name].attrs.get("experience_id"): name
                 for name in source["data"]}
        missing = [e for e in setting.experience_ids if e not in demos]
        if missing:
            raise DataNotFound(f"{Path(stream).name} has no demonstration of experience "
                               f"'{missing[0]}' of setting '{setting.id}'")
        data = out.create_group("data", track_order=True)
        for name, value in source["data"].attrs.items():
            data.attrs[name] = value
        total = 0
        for experience_id in setting.experience_ids:
            name = demos[experience_id]
            source.copy(source["data"][name], data, name=name)
            total += int(source["data"][name].attrs.get("num_samples", 0))
        data.attrs["total"] = total
        for name, value in metadata.items():
            out.attrs[name] = value
    return buffer.getvalue()
