"""The page headers of a Parquet file: how large each page says it unpacks to.

Arrow decompresses a page into a buffer of the size its header states
before anything else can look at it, so one page of a hostile file can ask
for up to 2 GB. The headers sit in the file's bytes in front of each page
(Thrift compact protocol), and the footer says where each column chunk's
pages begin and how many bytes they take: reading them costs a few bytes per
page and nothing is decompressed. `page_sizes` walks them; a malformed
header raises `BadPageHeader` (a ValueError), which the caller reports as an unreadable file.
"""

from __future__ import annotations

from collections.abc import Iterator

from expaudit.errors import InvalidInput

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)
_MAX_DEPTH = 32
"""Nesting a header may have; real ones nest three deep (page header, data page header, statistics)."""


class BadPageHeader(InvalidInput, ValueError):
    """A page header (or a column chunk's place) that is not a valid Parquet one."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise BadPageHeader("a page header ends inside a number")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _skip(buf: bytes, pos: int, kind: int, depth: int) -> int:
    """The position after one value of compact-protocol type `kind`."""
    if kind in (_TRUE, _FALSE):
        return pos
    if kind == _BYTE:
        return pos + 1
    if kind in (_I16, _I32, _I64):
        return _varint(buf, pos)[1]
    if kind == _DOUBLE:
        return pos + 8
    if kind == _BINARY:
        size, pos = _varint(buf, pos)
        return pos + size
    if kind in (_LIST, _SET):
        if pos >= len(buf):
            raise BadPageHeader("a page header ends inside a list")
        size, element = buf[pos] >> 4, buf[pos] & 0x0F
        pos += 1
        if size == 15:
            size, pos = _varint(buf, pos)
        for _ in range(size):
            pos = pos + 1 if element in (_TRUE, _FALSE) else _skip(buf, pos, element, depth + 1)
        return pos
    if kind == _MAP:
        size, pos = _varint(buf, pos)
        if size == 0:
            return pos
        key, value = buf[pos] >> 4, buf[pos] & 0x0F
        pos += 1
        for _ in range(size):
            pos = _skip(buf, _skip(buf, pos, key, depth + 1), value, depth + 1)
        return pos
    if kind == _STRUCT:
        return _struct(buf, pos, depth + 1)[1]
    raise BadPageHeader(f"a page header holds an unknown field type {kind}")


def _struct(buf: bytes, pos: int, depth: int) -> tuple[dict[int, int], int]:
    """The integer fields of the struct at `pos` by field id, and the position after it."""
    if depth > _MAX_DEPTH:
        raise BadPageHeader("a page header nests too deeply")
    fields: dict[int, int] = {}
    last = 0
    while True:
        if pos >= len(buf):
            raise BadPageHeader("a page header ends inside a struct")
        byte = buf[pos]
        pos += 1
        if byte == _STOP:
            return fields, pos
        delta, kind = byte >> 4, byte & 0x0F
        if delta:
            field = last + delta
        else:
            raw, pos = _varint(buf, pos)
            field = _zigzag(raw)
        last = field
        if kind == _I32:
            raw, pos = _varint(buf, pos)
            fields[field] = _zigzag(raw)
        else:
            pos = _skip(buf, pos, kind, depth)


def page_sizes(data: bytes, start: int, length: int) -> Iterator[int]:
    """The unpacked size each page of the column chunk at `start` (`length` bytes) states."""
    pos, end = start, start + length
    if start < 0 or length < 0 or end > len(data):
        raise BadPageHeader("a column chunk lies outside the file")
    while pos < end:
        fields, pos = _struct(data, pos, 0)
        unpacked, packed = fields.get(2), fields.get(3)  # uncompressed / compressed_page_size
        if unpacked is None or packed is None or unpacked < 0 or packed < 0:
            raise BadPageHeader("a page header has no valid page sizes")
        yield unpacked
        pos += packed
