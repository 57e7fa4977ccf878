"""The hand-worked matrix of the metric tests: three experiences, four scenes.

Each metric test file works its expected values out by hand from these two
arrays in its comments.
"""

import numpy as np

Y = np.array(
    [
        [1.0, 0.0, 0.6, 0.2],
        [0.0, 1.0, 0.6, 0.2],
        [0.4, 0.4, 0.0, 0.2],
    ]
)
"""Success rates, experiences x scenes."""
SCORES = np.array(
    [
        [3.0, 2.0, 1.0, 0.0],
        [1.0, 2.0, 0.0, 0.0],  # scene 1: tie with e0 -> lowest index e0
        [0.0, 0.0, 0.0, 5.0],
    ]
)
"""A rule's scores, experiences x scenes: it picks e0, e0, e0, e2."""
