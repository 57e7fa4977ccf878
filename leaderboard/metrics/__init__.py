"""The metrics of AUDIT_SPEC as pure functions: numpy arrays in, frozen results out.

`selection` (argmax, success, advantage), `reference`, `concentration`,
`gap` (frequency-matched shuffles), `bootstrap` (cluster intervals),
`ranking` (AUROC, r2_scene), `rerank` (CSLS, mutual proximity) and
`diagnostics` (label-using interventions). No I/O, no global state; every
random draw takes an explicit `numpy.random.Generator`.
"""
