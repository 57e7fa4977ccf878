"""What mutation testing found unchecked in the selector archive's size bound: the unpacked
size an archive may reach is checked to the byte, from the members' headers and on the
decompressed stream, not only somewhere below the global cap."""

from __future__ import annotations

import io
import tarfile

import pytest

from service.process import defaults
from service.errors import ValidationFailed
from service.selectors.archive import _HEADER_BYTES, check_archive, content_limit

SELECTOR = b"print(1)\n"
FREE = defaults.SELECTOR_ARCHIVE_RATIO_FREE_BYTES


def _archive(weights: int, pax_comment: int = 0) -> bytes:
    """A .tar.gz of `weights.bin` (`weights` bytes of zeros) and `selector.py`; with
    `pax_comment`, the selector's pax header carries a comment of that many bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("weights.bin")
        info.size = weights
        tar.addfile(info, io.BytesIO(b"\0" * weights))
        info = tarfile.TarInfo("selector.py")
        info.size = len(SELECTOR)
        if pax_comment:
            info.pax_headers = {"comment": "a" * pax_comment}
        tar.addfile(info, io.BytesIO(SELECTOR))
    return buffer.getvalue()


def test_files_of_exactly_the_free_size_pass_and_one_byte_more_is_refused():
    """A small upload may unpack to `SELECTOR_ARCHIVE_RATIO_FREE_BYTES` (16 MiB), counted
    over every file's size from its header: 16 MiB in all passes, 16 MiB + 1 byte does not,
    although the decompressed stream's own bound (for headers) leaves megabytes more."""
    exact = _archive(FREE - len(SELECTOR))
    assert content_limit(len(exact)) == FREE  # far under the ratio's share: the free size holds
    entries = check_archive(exact, "exact.tar.gz").entries
    assert sum(e.size for e in entries) == FREE
    over = _archive(FREE - len(SELECTOR) + 1)
    with pytest.raises(ValidationFailed, match=rf"'over.tar.gz': unpacks to more than {FREE} bytes, "
                                               rf"over 100 times its {len(over)} compressed bytes"):
        check_archive(over, "over.tar.gz")
    assert FREE + 1 < content_limit(len(over)) + _HEADER_BYTES * defaults.SELECTOR_ARCHIVE_MAX_FILES


def test_headers_past_the_stream_bound_are_refused_however_small_the_files():
    """The files hold 9 bytes; a pax header of 20 MiB is decompressed all the same and stops
    at the stream's bound: the free size plus room for the headers of the most entries."""
    bound = FREE + _HEADER_BYTES * (defaults.SELECTOR_ARCHIVE_MAX_FILES + 2)
    padded = _archive(0, pax_comment=20 << 20)
    assert bound < 20 << 20
    with pytest.raises(ValidationFailed, match=rf"unpacks to more than {FREE} bytes"):
        check_archive(padded, "padded.tar.gz")
    fits = _archive(0, pax_comment=bound - (1 << 20))  # a header under the bound is read
    assert [str(e.path) for e in check_archive(fits, "fits.tar.gz").entries] == [
        "weights.bin", "selector.py"]
