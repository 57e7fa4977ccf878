"""Embedding throughput on the CPU: images/s per encoder, uncached against cached, in one run.

For every encoder that can run here (raw32 always; mobilenet_v2 and
efficientnet_lite0 when the embed extra is installed), the same images are
embedded twice through `embed_cached` with a fresh cache directory: the
first pass computes every vector and writes it (uncached), the second reads
them all back (cached). The printed ratio is cached / uncached images/s: how
much the content-addressed cache saves when a setting is re-audited.

Images are the stored agent-view PNGs of a query set when the frozen data
has them (`--query-set`), else seeded random 128x128 images.

Usage:  .venv/bin/python benchmarks/embed_bench.py [--images 64] [--query-set stack-orig]
        [--threads 2] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from leaderboard.rules.embeddings import EmbeddingCache, NotComputed, embed_cached, load_encoder  # noqa: E402

ENCODERS = ("raw32", "mobilenet_v2", "efficientnet_lite0")


def bench_images(n: int, query_set: str) -> tuple[list[np.ndarray], str]:
    """`n` images and where they came from."""
    from benchmark_data.paths import query_set_dir
    from leaderboard.rules.embeddings.setting_scores import QUERY_TAR, read_tar_images

    tar = query_set_dir(query_set) / QUERY_TAR
    import tarfile

    if tar.is_file():
        try:
            with tarfile.open(tar) as archive:
                names = [m.name[:-4] for m in archive.getmembers() if m.name.endswith(".png")][:n]
            return read_tar_images(tar, names), f"{len(names)} stored {query_set} images"
        except tarfile.ReadError as exc:
            print(f"embed_bench: {query_set}/{QUERY_TAR} is not readable yet ({exc}); using random images")
    rng = np.random.default_rng(0)
    return ([rng.integers(0, 256, (128, 128, 3), dtype=np.uint8) for _ in range(n)],
            f"{n} seeded random 128x128 images (no readable {query_set}/{QUERY_TAR})")


def measure(encoder, images: list[np.ndarray]) -> dict:
    """Uncached then cached pass through one fresh cache; rates in images/s."""
    with tempfile.TemporaryDirectory() as directory:
        cache = EmbeddingCache(directory)
        start = time.perf_counter()
        first, stats_first = embed_cached(encoder, images, cache)
        uncached = time.perf_counter() - start
        start = time.perf_counter()
        second, stats_second = embed_cached(encoder, images, cache)
        cached = time.perf_counter() - start
    if not np.array_equal(first, second) or stats_second.misses:
        raise RuntimeError(f"{encoder.name}: the cached pass differs from the computed one")
    return {"encoder": encoder.name, "images": len(images), "dim": int(first.shape[1]),
            "uncached_images_per_s": len(images) / uncached, "cached_images_per_s": len(images) / cached,
            "ratio": uncached / cached, "misses_first_pass": stats_first.misses}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--query-set", default="stack-orig")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    images, origin = bench_images(args.images, args.query_set)
    print(f"embed_bench: {origin}")
    results = []
    for name in ENCODERS:
        encoder = load_encoder(name)
        if isinstance(encoder, NotComputed):
            print(f"{name:20s} {encoder.message}")
            continue
        if name != "raw32":
            import torch

            torch.set_num_threads(args.threads)
            encoder.embed(images[:2])  # warm-up: first-call allocations are not throughput
        row = measure(encoder, images)
        results.append(row)
        print(f"{name:20s} uncached {row['uncached_images_per_s']:9.1f} img/s   cached "
              f"{row['cached_images_per_s']:9.1f} img/s   cached/uncached ratio {row['ratio']:7.1f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
