"""Making the frozen data: rollouts of a setting, policy training, verification, exports, images.

The modules that run rollouts or render (`rollouts`, `policies`, `verify`,
`images`, `library_stream`, `query_set_build`) import the simulator at the
top, so they need the `sim` extra (robosuite, MuJoCo), and torch to train or
run policies; `export` and `dataset_card` only read the frozen data and run
on the core install. Import the module you need; this package imports none
of them. Above the frozen-data readers and the simulator; nothing below
imports it.
"""
