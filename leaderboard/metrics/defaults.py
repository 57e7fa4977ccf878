"""Every fixed number of the audit, in one place, each with the reason it has that value.

These are fixed in advance (AUDIT_SPEC): changing one changes every published
number, so the values are written into each report's `inputs` block.
"""

from __future__ import annotations

SCHEMA_VERSION = "1.0"
"""Version of the JSON report layout; bumped when a key is renamed or removed."""

N_SHUFFLES = 2000
"""Frequency-matched shuffles per gap: the paper's 2,000, enough that the
2.5/97.5 percentiles of the envelope move by well under 0.01 between seeds."""

N_BOOTSTRAP = 2000
"""Cluster-bootstrap resamples: 2,000 keeps the Monte-Carlo error of a 95%
percentile interval small against its width with 40 clusters."""

N_NOISE_NULL = 2000
"""Resamples of the noise null (AUDIT_SPEC, "Noise-aware reference quantities": B = 2000):
its 95th percentile and p-value are read from them."""

NOISE_ONE_SEED_REASON = "one seed per cell: the cross-fitted oracle and the noise null need at least two"
"""Why the noise-aware quantities are null on a tensor with a single seed."""

SEED = 0
"""Default seed of every random draw (shuffles, bootstrap, sub-libraries); it
is written into the report so any number can be reproduced."""

CONFIDENCE = 0.95
"""Coverage of the percentile bootstrap intervals and of the shuffle envelope."""

ADVANTAGE_MIN_DENOMINATOR = 0.05
"""`advantage` is null when `success_oracle - success_random` is below this:
with a smaller denominator a difference of one scene swings A by more than
its whole range (fixed in advance, as in the paper)."""

POSITIVE_LABEL = 0.8
"""A pair is a positive for AUROC when its mean success over seeds is at least
this (4 of 5 seeds): it clearly transfers."""

NEGATIVE_LABEL = 0.2
"""A pair is a negative for AUROC when its mean success is at most this (at
most 1 of 5 seeds); pairs in between are ambiguous and excluded."""

CONCENTRATION_RATIO_SPREAD = 1.5
"""A rule whose top-pick share is at most 1.5 times the oracle's "spreads" its
selections; the paper found visual rules at 1.5-3 times the oracle at K >= 10."""

BEST_FIXED_WINDOW = 0.05
"""A concentrated rule within this success distance of best-fixed has shown
only that one experience is good (the verdict's "one good experience")."""

CSLS_K = 10
"""Neighbourhood size of CSLS re-ranking: the untuned value of Conneau et al.
(2018), as used in the paper; clipped to the matrix size."""

EQUALIZED_LIBRARY_SIZE = 5
"""Size K' = min(K, 5) of the quality-equalized sub-library."""

EQUALIZE_EXHAUSTIVE_MAX_K = 10
"""Up to this library size every K'-subset is tried; above it a sliding
window over sorted quality is used (C(50, 5) = 2.1 million subsets is too many)."""

SUBLIBRARY_SOURCE_K = 50
"""Random sub-libraries are drawn only from libraries of at least this size,
the K = 50 setting of the paper; smaller libraries have too few compositions."""

SUBLIBRARY_SIZE = 10
"""Size of each random sub-library (the paper's K = 10 compositions)."""

SUBLIBRARY_DRAWS = 200
"""Number of random sub-libraries (the paper's 200)."""

MIN_DEFINED_RESAMPLE_SHARE = 0.5
"""A bootstrap interval for a quantity that can be undefined on a resample
(advantage, within-query AUROC) is reported only when at least this share of
resamples define it; the report states how many were undefined."""

ROUND_DIGITS = 6
"""Floats in the JSON report are rounded to this many decimals so that the
same inputs and seed give byte-identical files across platforms."""

SELECTION_ONLY_REASON = (
    "selection-only input: the submission names one experience per scene and gives "
    "no scores to rank the candidates with"
)
"""Why the ranking metrics (AUROCs, r2) are null for a selection-only submission:
a selection without scores has nothing to rank the candidates with."""

SELECTION_ONLY_DIAGNOSTIC_REASON = (
    "selection-only input: re-selecting on a changed library or re-ranked scores needs "
    "a score for every candidate"
)
"""Why the label-using diagnostics are null for a selection-only submission:
each re-runs the selection on changed inputs, which needs every candidate's score."""
