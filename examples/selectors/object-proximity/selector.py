"""object-proximity: pick the experience whose base scene put the objects where the query does.

For each object named in both the query's and the base scene's metadata
(`object_positions`, world-frame [x, y, z] in metres), take the Euclidean
distance between its two positions; the score of an experience in a scene is
minus the sum of those distances over the shared objects. A scene and a base
scene with no object in common score -1e9: the lowest score, and finite, as
the scores file requires.

Reads the selector protocol's /input and writes /output/scores.csv; the
directories can be moved with EXPAUDIT_INPUT and EXPAUDIT_OUTPUT. Standard
library only.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

NO_SHARED_OBJECT = -1e9


def positions(meta_path: Path) -> dict[str, list[float]]:
    return json.loads(meta_path.read_text())["object_positions"]


def score(query: dict[str, list[float]], base: dict[str, list[float]]) -> float:
    shared = sorted(set(query) & set(base))
    if not shared:
        return NO_SHARED_OBJECT
    return -sum(math.dist(query[name], base[name]) for name in shared)


def main() -> None:
    root = Path(os.environ.get("EXPAUDIT_INPUT", "/input"))
    out = Path(os.environ.get("EXPAUDIT_OUTPUT", "/output"))
    setting = json.loads((root / "setting.json").read_text())
    library = {e: positions(root / "library" / e / "meta.json")
               for e in setting["experience_ids"]}
    with open(out / "scores.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["scene_id", "experience_id", "score"])
        for scene_id in setting["scene_ids"]:
            query = positions(root / "scenes" / scene_id / "meta.json")
            for experience_id in setting["experience_ids"]:
                value = score(query, library[experience_id])
                writer.writerow([scene_id, experience_id, repr(value)])


if __name__ == "__main__":
    main()
