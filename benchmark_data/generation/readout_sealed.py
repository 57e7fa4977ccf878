"""Matching committed sealed observations to regenerated cells by their pixels.

The ids of `confirm` and `eval` observations are opaque (an HMAC under the id key of the
sealed directory), so when the sealed labels and the key are lost, the label of a committed
observation is found by re-rendering its initialization and looking for the one regenerated
row whose agent view and wrist view both agree with the committed images up to the
rasterizer's rounding on another CPU (`simulator.readout_protocol.renders_agree`). Rows
without images (rejected cells) carry only their id: they are placed by elimination, which
works only when an initialization has a single such row and all its other rows matched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from expaudit.errors import InvalidInput
from simulator.readout_protocol import renders_agree


@dataclass(frozen=True)
class Matching:
    """`positions[i]`: the regenerated row of committed row `i` (-1: none); `problems`: what
    differs, one line each (empty when every row has exactly one match)."""

    positions: np.ndarray
    matched: int
    problems: list[str] = field(default_factory=list)


def match_rows(committed: pd.DataFrame, committed_views: tuple[np.ndarray, np.ndarray],
               regenerated: pd.DataFrame, regenerated_views: tuple[np.ndarray, np.ndarray]) -> Matching:
    """Match each committed row to one regenerated row of the same initialization and kind.

    Both frames have `observation_id`, `initialization`, `kind` and `image` (index into their
    views, -1 for a row without images); views are `(agent, wrist)` arrays (N, H, W, 3) uint8.
    A row with images matches a regenerated row whose two views agree with its own
    (`renders_agree`: every pixel within the rasterizer's rounding); a row without images matches by elimination, when it is its initialization's
    only one and every other row of that initialization matched.
    """
    c_agent, c_wrist = committed_views
    committed, regenerated = committed.reset_index(drop=True), regenerated.reset_index(drop=True)
    r_agent, r_wrist = regenerated_views
    positions = np.full(len(committed), -1, dtype=np.int64)
    problems: list[str] = []
    regen_by_init = dict(tuple(regenerated.groupby("initialization", sort=False)))
    used = np.zeros(len(regenerated), dtype=bool)
    for init, rows in committed.groupby("initialization", sort=False):
        regen = regen_by_init.get(init)
        if regen is None:
            problems.append(f"{init}: no regenerated rows for this initialization")
            continue
        with_images = [(pos, k) for pos, k in zip(regen.index, regen["image"]) if k >= 0]
        before = len(problems)
        for i, oid, kind, k in zip(rows.index, rows["observation_id"], rows["kind"], rows["image"]):
            if k < 0:
                continue
            hits = [pos for pos, j in with_images
                    if renders_agree(r_agent[j], c_agent[k]) and renders_agree(r_wrist[j], c_wrist[k])]
            if not hits:
                problems.append(f"{oid} ({init}): no regenerated cell has its pixels")
            elif len(hits) > 1:
                problems.append(f"{oid} ({init}): {len(hits)} regenerated cells have its pixels")
            elif used[hits[0]]:
                problems.append(f"{oid} ({init}): its pixels match a cell already matched to "
                                "another observation")
            elif regenerated.at[hits[0], "kind"] != kind:
                problems.append(f"{oid} ({init}): kind {kind!r} but its cell is "
                                f"{regenerated.at[hits[0], 'kind']!r}")
            else:
                positions[i], used[hits[0]] = hits[0], True
        blind = rows.index[rows["image"].to_numpy() < 0]
        spare = [p for p in regen.index[regen["image"].to_numpy() < 0] if not used[p]]
        if len(blind) != len(spare):
            problems.append(f"{init}: {len(blind)} observations without images, {len(spare)} "
                            "regenerated cells without images")
        elif len(blind) > 1:
            problems.append(f"{init}: {len(blind)} observations without images cannot be told "
                            "apart without the id key")
        elif len(blind) == 1 and len(problems) > before:
            problems.append(f"{rows.at[blind[0], 'observation_id']} ({init}): without images, and "
                            "the other observations of its initialization do not all match")
        elif len(blind) == 1:
            if regenerated.at[spare[0], "kind"] != rows.at[blind[0], "kind"]:
                problems.append(f"{rows.at[blind[0], 'observation_id']} ({init}): kind differs "
                                "from the one regenerated cell without images")
            else:
                positions[blind[0]], used[spare[0]] = spare[0], True
        left = [p for p in regen.index if not used[p] and regen.at[p, "image"] >= 0]
        if left:
            problems.append(f"{init}: {len(left)} regenerated cells with images match no "
                            "committed observation")
    missing = sorted(set(regen_by_init) - set(committed["initialization"]))
    if missing:
        problems.append(f"regenerated initializations not in the bank: {', '.join(missing)}")
    return Matching(positions, int((positions >= 0).sum()), problems)


def problem_text(problems: list[str], shown: int = 12) -> str:
    """The first `shown` problems, joined, and how many more there are."""
    more = len(problems) - shown
    return "; ".join(problems[:shown]) + (f"; and {more} more" if more > 0 else "")


def require_match(matching: Matching, what: str) -> np.ndarray:
    """The positions of a complete matching, else an error naming what differs."""
    if not matching.problems:
        return matching.positions
    raise InvalidInput(f"{what}: {matching.matched} of {len(matching.positions)} observations matched; "
                       + problem_text(matching.problems))
