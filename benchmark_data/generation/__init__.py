"""Making the frozen data: rollouts of a setting, policy training, verification, exports, images.

Every module here runs or reads rollouts, so it needs the `sim` extra
(robosuite, MuJoCo) and, for policies, torch: import the module you need
(`rollouts`, `policies`, `verify`, `export`, `images`, `dataset_card`); this
package imports none of them. Above the frozen-data readers and the
simulator; nothing below imports it.
"""
