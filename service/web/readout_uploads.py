"""A readout submission's create request: its setting, input kind and format, and the checked upload.

`POST /submissions` with `setting` naming a readout setting (`service.catalog.readout`)
comes here instead of the scores path: the upload is read and checked once, by the
engine's reader (`leaderboard.readout.upload.read_upload`, against the bank's public
observations), and its checked table is what the audit job reads. A setting whose sealed
labels are not installed takes no submission (404 `not_available`), before anything is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.readout.upload import FORMATS, encode_upload, read_upload
from service.catalog import open_readout_catalog
from service.errors import ValidationFailed

INPUTS = ("features", "predictions")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".npz": "npz"}


@dataclass(frozen=True)
class ReadoutUpload:
    """A checked readout upload: its setting, kind, format and the table to store."""

    setting_id: str
    kind: str
    input_format: str
    table: bytes


def readout_setting(svc, fields: dict[str, str]) -> str | None:
    """The readout setting named by the `setting` field, or None when it names none."""
    value = (fields.get("setting") or "").strip()
    if not value or "," in value:
        return None
    return value if open_readout_catalog(svc.config, svc.catalog).is_readout(value) else None


def _format(filename: str, explicit: str | None) -> str:
    if explicit:
        if explicit not in FORMATS:
            raise ValidationFailed(f"format of a readout upload must be one of {list(FORMATS)}, got "
                                   f"'{explicit[:40]}'", field="format")
        return explicit
    for suffix, fmt in _SUFFIXES.items():
        if filename.lower().endswith(suffix):
            return fmt
    raise ValidationFailed(f"cannot tell the format of '{filename}': name the file *.parquet or *.npz, "
                           "or pass format=parquet|npz", field="format")


def check_readout_upload(svc, setting_id: str, data: bytes, filename: str, fields: dict[str, str],
                         name: str) -> ReadoutUpload:
    """Read and check the upload against the setting's bank; every problem is a 4xx naming it."""
    kind = fields.get("input") or "features"
    if kind not in INPUTS:
        raise ValidationFailed(f"input must be one of {list(INPUTS)}, got '{kind[:40]}'", field="input")
    fmt = _format(filename, fields.get("format"))
    catalog = open_readout_catalog(svc.config, svc.catalog)
    catalog.check_sealed(setting_id)
    rep = read_upload(data, fmt, filename, kind, catalog.observations(setting_id), name)
    return ReadoutUpload(setting_id, kind, fmt, encode_upload(rep))


def check_readout_program(svc, setting_id: str) -> None:
    """A program on `setting_id` is taken only where its sealed labels are (404 otherwise)."""
    open_readout_catalog(svc.config, svc.catalog).check_sealed(setting_id)
