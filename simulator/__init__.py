"""Rollouts in robosuite/MuJoCo: scenes, scripted experts, reuse mechanisms, the executor.

The simulator side of the benchmark (the `sim` extra): `executor.execute` and
`policy_executor.PolicyExecutor` run cells, `provenance` records which code ran
them, `scenes` / `door_scenes` sample layouts, `appearance` the appearance
draws. Importing this package loads no simulator; its modules do. The
selector sandbox, which needs no simulator, is the subpackage `sandbox`.
"""

import os

from expaudit.numerics import pin_kernels

pin_kernels()  # before any module of this package loads numpy or torch
# Headless rendering by default: MuJoCo picks its OpenGL backend once, when it is first
# imported (by a module of this package), and EGL needs no display. An explicit MUJOCO_GL
# (osmesa, glfw) wins.
os.environ.setdefault("MUJOCO_GL", "egl")
# Mesa's software renderer (llvmpipe, EGL without a GPU) starts one rasterizer thread per core
# in every rendering process; the CPU runners already keep one process per core, so those
# threads only contend. 0 rasterizes in the calling thread: the same pixels, faster
# (benchmarks/render_threads_bench.py). Read once, when the first context is made; an explicit
# LP_NUM_THREADS wins.
os.environ.setdefault("LP_NUM_THREADS", "0")
