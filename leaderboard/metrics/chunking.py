"""Memory bounds of the metrics: work on blocks of rows, never on a whole product.

The resampling metrics (shuffles, bootstrap resamples, random
sub-libraries) and the within-query AUROC each process a product of two
sizes (resamples x scenes, resamples x experiences, scenes x candidates).
They walk it in blocks of whole rows whose size is bounded by
`CHUNK_ELEMENTS`, so the working memory of a metric does not grow with
`K x Q x resamples`. Rows are independent (one shuffle, one resample, one
scene), so the block size never changes a number; it is read at call time,
and the tests force tiny blocks to exercise the same paths a lab-scale
matrix takes.
"""

from __future__ import annotations

from collections.abc import Iterator

CHUNK_ELEMENTS = 1 << 20
"""Elements of one working block (8 MiB per float64 array). A block needs a
handful of such arrays, so a metric's working memory stays under about
100 MB whatever K, Q and the resample counts; a K = 50 x 200-scene setting
with 2,000 resamples fits in one block, as before chunking."""


def row_blocks(n_rows: int, row_length: int) -> Iterator[slice]:
    """Consecutive slices of `range(n_rows)` holding at most `CHUNK_ELEMENTS` elements.

    A row of `row_length` elements is never split; a row longer than the
    budget is a block of its own.
    """
    rows = max(1, CHUNK_ELEMENTS // max(1, row_length))
    for start in range(0, n_rows, rows):
        yield slice(start, min(n_rows, start + rows))
