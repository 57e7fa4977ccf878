"""The web side of a container submission: read and check the selector reference.

A container submission is a multipart `POST /api/v1/submissions` with one
`setting` and either

- a `selector` file part: a `.tar.gz` of a selector directory (services
  running the local sandbox), or
- an `image` field: a Docker image reference pinned by digest (services
  running the Docker sandbox).

Everything that can be checked without running the selector is checked here,
so a bad archive is a 422 at once rather than a failed submission later.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from flask import Request

from leaderboard.scores import requested_settings
from service.catalog import Catalog
from service.errors import ValidationFailed
from service.submissions import request_fields
from service.selectors.archive import ARCHIVE_FORMAT, IMAGE_FORMAT, check_archive, check_image_reference


@dataclass(frozen=True)
class SelectorUpload:
    """A checked container submission: what to store and how the job finds the selector."""

    setting_id: str
    backend: str
    data: bytes
    filename: str
    input_format: str
    image: str | None


def is_container_request(request: Request) -> bool:
    """True for a multipart create request naming a selector instead of a scores file."""
    return request.mimetype == "multipart/form-data" and (
        "selector" in request.files or "image" in request.form)


def read_selector_request(request: Request) -> tuple[bytes, str, dict[str, str]]:
    """(archive bytes, or b"" for an image; archive name or image reference; form fields)."""
    fields = request_fields(request)
    if "file" in request.files:
        raise ValidationFailed("send either a scores 'file' or a selector ('selector' archive or "
                               "'image'), not both", field="file")
    part = request.files.get("selector")
    if part is not None:
        if "image" in fields:
            raise ValidationFailed("send either a 'selector' archive or an 'image', not both",
                                   field="image")
        name = PurePosixPath(part.filename or "selector.tar.gz").name or "selector.tar.gz"
        return part.read(), name, fields
    return b"", fields.get("image", ""), fields


def check_selector(data: bytes, name: str, fields: dict[str, str], catalog: Catalog,
                   backend: str) -> SelectorUpload:
    """Validate the request against the service's sandbox backend and the setting."""
    settings = requested_settings(fields.get("setting"))
    if len(settings) != 1:
        raise ValidationFailed(f"a container submission names exactly one setting (field "
                               f"'setting'); got {settings or 'none'}", field="setting")
    setting_id = settings[0]
    catalog.get_setting(setting_id, field="setting")
    if backend == "none":
        raise ValidationFailed("this service does not run selectors; upload a scores file",
                               field="selector")
    if not catalog.supports_selectors(setting_id):
        raise ValidationFailed(f"setting '{setting_id}' takes scores files only: it has no frozen "
                               "images and library to build a selector's /input from",
                               field="setting")
    return _reference(data, name, fields, backend, setting_id)


def check_program(data: bytes, name: str, fields: dict[str, str], backend: str,
                  setting_id: str) -> SelectorUpload:
    """Validate a readout program (docs/readout.md) for readout setting `setting_id`: it
    writes features, so an `input` field may only say so."""
    if fields.get("input", "features") != "features":
        raise ValidationFailed("a program on a readout setting writes features: input must be "
                               f"'features' or absent, got '{fields['input'][:40]}'", field="input")
    if backend == "none":
        raise ValidationFailed("this service does not run programs; upload a features or "
                               "predictions file", field="selector")
    return _reference(data, name, fields, backend, setting_id)


def _reference(data: bytes, name: str, fields: dict[str, str], backend: str,
               setting_id: str) -> SelectorUpload:
    """The archive or image reference, checked against the service's sandbox backend."""
    if "image" in fields:
        if backend != "docker":
            raise ValidationFailed("this service runs selectors in its local sandbox: upload the "
                                   "selector directory as a .tar.gz 'selector' part, not an image",
                                   field="image")
        image = check_image_reference(fields["image"])
        return SelectorUpload(setting_id, "docker", image.encode(), image, IMAGE_FORMAT, image)
    if backend != "local":
        raise ValidationFailed("this service runs selectors as Docker images: send an 'image' "
                               "field pinned by digest, not an archive", field="selector")
    check_archive(data, name)
    return SelectorUpload(setting_id, "local", data, name, ARCHIVE_FORMAT, None)
