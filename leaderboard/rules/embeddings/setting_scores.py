"""Embedding rule scores of one benchmark setting, from its stored agent-view images.

Query images are `query_sets/<id>/images.tar` (`<scene_id>.png`), base-scene
images `libraries/<id>/base_images.tar` (`<experience_id>.png`), read through
the frozen image archives' reader. Each rule gives a (K, Q) score matrix, or the
reason it is not computed (weights missing, images missing).
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Sequence

import numpy as np

from benchmark_data.image_archive import BASE_TAR, QUERY_TAR, base_images_path, query_images_path, read_tar_images
from leaderboard.rules.embeddings.base import NotComputed
from leaderboard.rules.embeddings.cache import EmbeddingCache, embedding_scores
from leaderboard.rules.embeddings.registry import ENCODER_NAMES, load_encoder

__all__ = ["BASE_TAR", "QUERY_TAR", "image_rule_scores", "read_tar_images", "setting_images"]


def setting_images(setting, data, root=None) -> tuple[list, list] | str:
    """(query images in scene order, base images in library order), or why they are missing."""
    query_tar = query_images_path(setting.query_set, root)
    base_tar = base_images_path(setting.library_id, root)
    for path, owner in ((query_tar, setting.query_set), (base_tar, setting.library_id)):
        if not path.is_file():
            return f"images missing: {owner}/{path.name} is not in the frozen data"
    try:
        return (read_tar_images(query_tar, data.scenes.scene_ids),
                read_tar_images(base_tar, data.experience_ids))
    except (tarfile.ReadError, KeyError) as exc:
        return f"images missing: {exc.args[0] if exc.args else exc}"


def image_rule_scores(setting, data, root=None, cache_dir: Path | None = None,
                      names: Sequence[str] = ENCODER_NAMES) -> dict[str, np.ndarray | str]:
    """rule -> (K, Q) scores, or the reason the rule is not computed."""
    cache = EmbeddingCache(cache_dir) if cache_dir is not None else None
    images: tuple[list, list] | str | None = None
    out: dict[str, np.ndarray | str] = {}
    for name in names:
        encoder = load_encoder(name, task=getattr(setting, "task", None), root=root)
        if isinstance(encoder, NotComputed):
            out[name] = encoder.reason
            continue
        if images is None:
            images = setting_images(setting, data, root)
        if isinstance(images, str):
            out[name] = images
            continue
        out[name] = embedding_scores(encoder, images[0], images[1], cache)
    return out
