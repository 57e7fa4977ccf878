"""The dataset card's machine-readable half: Croissant (MLCommons) metadata of the frozen data.

`croissant_document(root)` describes every file of the frozen data directory
(`manifest.json`: path, size, SHA-256) as a `cr:FileObject`, and the tables a
user reads as `cr:RecordSet`s whose fields come from the Parquet schemas
themselves: the executed cells (the outcomes) per mechanism and query set,
the query scenes per query set, the experience libraries, each readout
bank's observations and public (train and dev) labels, plus the settings of
the registry as inline records. Nothing is typed by hand, so the card
cannot drift from the files; `tests/benchmark_data/generation/test_dataset_card.py` checks the
committed card against a fresh one.

    python -m benchmark_data.generation.dataset_card [--root DIR] [--out benchmark_data/dataset/croissant.json]

The human-readable half is `benchmark_data/dataset/README.md`. Both are published with
the leaderboard site (`dataset/index.html`, `dataset/croissant.json`). Reading the records
with `mlcroissant` needs its Parquet extra (`pip install "mlcroissant[parquet]"`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmark_data.downloads import CITATION, LICENSE, data_version
from benchmark_data.paths import root_or_default
from benchmark_data.registry import SETTINGS

CARD_PATH = Path(__file__).resolve().parents[1] / "dataset" / "croissant.json"
"""Where the committed card lives (beside the dataset README)."""

CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
    "samplingRate": "cr:samplingRate",
    "equivalentProperty": "cr:equivalentProperty",
}
"""The Croissant JSON-LD context (1.0, with the two keys mlcroissant's validator also expects)."""

CONFORMS_TO = "http://mlcommons.org/croissant/1.0"

CONTENT_PREFIX = "../frozen/"
"""File URLs are relative to the card: it lives in `benchmark_data/dataset/`, the files in
`benchmark_data/frozen/` (a file's `@id` is its path in the frozen directory)."""

NAME = "expaudit-frozen"
DESCRIPTION = (
    "Complete transfer matrices for auditing visual experience retrieval in robot manipulation: "
    "stored experiences (Stack and Door tasks, recorded by scripted experts in robosuite/MuJoCo) "
    "executed by Replay or by learned BC-RNN image policies in every scene of fixed query sets "
    "(40 physical states x 5 appearance draws), 5 seeds per cell. With the base-scene and "
    "query-scene images, the scene layouts and the recorded paths, a retrieval rule can be "
    "scored against random, best-fixed and the per-scene oracle. The sealed query set's "
    "outcomes are not distributed. Readout banks (Door hinge angle, Stack cube x): natural "
    "frames and controlled coordinate x robot-context cells of seeded initializations, with "
    "their images and the train and dev labels, for auditing a representation's fitted "
    "readout; the confirm and eval labels are sealed."
)
URL = "https://arxiv.org/abs/2609.26567"
"""The paper the data accompanies (the card's `url`)."""

ENCODING = {".parquet": "application/x-parquet", ".tar": "application/x-tar",
            ".hdf5": "application/x-hdf5", ".json": "application/json",
            ".md": "text/markdown", ".pt": "application/octet-stream",
            ".jsonl": "application/jsonl"}

DATA_TYPES = {"string": "sc:Text", "large_string": "sc:Text", "bool": "sc:Boolean",
              "double": "sc:Float", "float": "sc:Float", "int8": "sc:Integer",
              "int16": "sc:Integer", "int32": "sc:Integer", "int64": "sc:Integer"}
"""Parquet column types described as Croissant fields (list columns are left out)."""

FIELD_NOTES = {
    "success": "1 when the executed experience solved the task in this scene and seed, else 0",
    "experience_id": "the stored experience (library order: e000 is the oldest)",
    "state_id": "the physical state (Replay cells, scenes) or the scene (policy cells)",
    "scene_id": "one query scene: a state under one appearance draw",
    "seed": "rollout seed (0-4)",
    "layout_level": "how far the layout is perturbed from the library's (0 = none)",
    "appearance_draw": "which of the 5 appearance draws renders the scene",
    "observation_id": "one readout observation (an image pair of the bank)",
    "split": "train, dev (labels public), confirm or eval (labels sealed)",
    "initialization": "the simulator initialization the observation comes from (the statistical unit)",
    "kind": "natural (a frame of a real trajectory) or controlled (a cell of the coordinate x context grid)",
    "shard": "the images-*.npz file holding the observation's agentview and wrist images",
    "row": "the observation's row in its shard",
    "coordinate": "the true coordinate (door: hinge angle in degrees; stack: cube A's x in mm)",
    "context": "the robot context of a controlled cell (-1 or null for a natural frame)",
    "grid_index": "the coordinate's index on the controlled grid, 0-5 in increasing order",
    "admitted": "whether the controlled cell passed physical validation (only admitted cells count)",
}

READOUT_SEALED_NOTE = ("The labels of the confirm and eval splits are sealed: they are not in the "
                       "release.")


def _file_objects(manifest: dict) -> list[dict]:
    objects = []
    for path, entry in sorted(manifest["files"].items()):
        objects.append({"@type": "cr:FileObject", "@id": path, "name": path,
                        "contentUrl": CONTENT_PREFIX + path, "contentSize": f"{entry['bytes']} B",
                        "encodingFormat": ENCODING.get(Path(path).suffix, "application/octet-stream"),
                        "sha256": entry["sha256"]})
    return objects


def _record_set(record_id: str, description: str, file_id: str, schema) -> dict:
    fields = []
    for name, kind in zip(schema.names, schema.types):
        data_type = DATA_TYPES.get(str(kind))
        if data_type is None:
            continue
        field = {"@type": "cr:Field", "@id": f"{record_id}/{name}", "name": name,
                 "dataType": data_type,
                 "source": {"fileObject": {"@id": file_id}, "extract": {"column": name}}}
        if name in FIELD_NOTES:
            field["description"] = FIELD_NOTES[name]
        fields.append(field)
    return {"@type": "cr:RecordSet", "@id": record_id, "name": record_id,
            "description": description, "field": fields}


def _tables(root: Path, manifest: dict) -> list[dict]:
    import pyarrow.parquet as pq

    record_sets = []
    for path in sorted(manifest["files"]):
        if not path.endswith(".parquet"):
            continue
        schema = pq.read_schema(root / path)
        parts = Path(path).parts
        if parts[0] == "cells":
            mechanism, query_set = Path(path).stem.split("__")
            record_sets.append(_record_set(
                f"outcomes/{mechanism}/{query_set}",
                f"Executed cells of mechanism {mechanism} on query set {query_set}: one row per "
                "(experience, state_id, seed). For Replay state_id is a physical state and its "
                "5 appearance draws share the outcome (Replay does not look); for the image "
                "policies state_id is the scene id (state and draw).", path, schema))
        elif parts[0] == "query_sets" and parts[-1] == "scenes.parquet":
            record_sets.append(_record_set(
                f"scenes/{parts[1]}", f"Query scenes of query set {parts[1]}, in published order "
                "(images: images.tar beside it, <scene_id>.png).", path, schema))
        elif parts[0] == "readout" and parts[-1] == "observations.parquet":
            record_sets.append(_record_set(
                f"readout/{parts[1]}/observations", f"Every observation of the {parts[1]} readout bank "
                "(all four splits): its split, initialization and kind, and the image shard and "
                "row holding its 64x64 agentview and wrist images (images-*.npz beside it: arrays "
                "observation_id, agentview, wrist).", path, schema))
        elif parts[0] == "readout" and parts[-1] == "labels.parquet":
            record_sets.append(_record_set(
                f"readout/{parts[1]}/labels", f"Labels of the train and dev observations of the "
                f"{parts[1]} readout bank: the coordinate, the grid and context of a controlled "
                f"cell and its validation. {READOUT_SEALED_NOTE}", path, schema))
        elif parts[0] == "libraries" and parts[-1] == "experiences.parquet":
            record_sets.append(_record_set(
                f"experiences/{parts[1]}", f"Accepted recordings of the {parts[1]} stream, oldest "
                "first (base-scene images: base_images.tar, <experience_id>.png).", path, schema))
    return record_sets


def _settings_record_set() -> dict:
    columns = (("setting_id", "sc:Text"), ("task", "sc:Text"), ("mechanism", "sc:Text"),
               ("k", "sc:Integer"), ("query_set", "sc:Text"), ("library_id", "sc:Text"),
               ("sealed", "sc:Boolean"), ("description", "sc:Text"))
    rows = []
    for setting in SETTINGS.values():
        values = {"setting_id": setting.id, "task": setting.task,
                  "mechanism": getattr(setting.mechanism, "value", setting.mechanism),
                  "k": setting.k, "query_set": setting.query_set,
                  "library_id": setting.library_id, "sealed": setting.sealed,
                  "description": setting.description}
        rows.append({f"settings/{name}": values[name] for name, _ in columns})
    return {"@type": "cr:RecordSet", "@id": "settings", "name": "settings",
            "description": "The benchmark's settings: a library of K experiences (the first K "
                           "of the stream), a mechanism and a query set.",
            "key": {"@id": "settings/setting_id"},
            "field": [{"@type": "cr:Field", "@id": f"settings/{name}", "name": name,
                       "dataType": kind} for name, kind in columns],
            "data": rows}


def croissant_document(root: str | Path | None = None) -> dict:
    """The Croissant JSON-LD of the frozen data under `root` (None: the shipped data)."""
    root = root_or_default(root)
    manifest = json.loads((root / "manifest.json").read_text())
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": NAME,
        "description": DESCRIPTION,
        "license": LICENSE,
        "url": URL,
        "citeAs": CITATION,
        "version": data_version(),
        "keywords": ["robotics", "experience retrieval", "benchmark", "robosuite", "MuJoCo",
                     "transfer matrix", "audit", "readout", "representation"],
        "isLiveDataset": False,
        "distribution": _file_objects(manifest),
        "recordSet": [_settings_record_set(), *_tables(root, manifest)],
    }


def card_bytes(root: str | Path | None = None) -> bytes:
    return (json.dumps(croissant_document(root), indent=1, sort_keys=False) + "\n").encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="frozen data directory (default: the shipped data)")
    parser.add_argument("--out", default=str(CARD_PATH), help="where to write the card")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(card_bytes(args.root))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
