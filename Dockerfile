# Images of expaudit; the command picks the role:
#   web     the REST API and the embedded static leaderboard route (gunicorn)
#   worker  RQ worker for audit and publish jobs (and container selectors)
#   runner  `expaudit runner`: rollout jobs (robosuite/MuJoCo) and container selectors
#   seed    copy the frozen data into $EXPAUDIT_FROZEN_ROOT, then exit
# Anything else is executed as given (e.g. `expaudit audit ...`).
#
# Stages (`docker build --target NAME`):
#   app         (the default, last stage) CPU image for every role; `EXTRAS`
#               picks the extras (`sim,policies` for a CPU runner of image policies)
#   runner-gpu  the runner on an NVIDIA GPU: the CUDA build of torch with its
#               torchvision, the sim and policies extras, MuJoCo rendering
#               through the GPU's EGL; batched policy inference on `cuda`
# Both share `base`: Python, the EGL libraries, the user, the entrypoint and
# the health check. A third stage, `wheels`, holds the compiler: it builds
# wheels for the dependencies PyPI ships only as source (evdev, pulled by
# robosuite through pynput); the two images install from those wheels and
# carry no compiler.

# ------------------------------------------------------------------- base ---
FROM python:3.11-slim AS base

# EGL for MuJoCo's offscreen rendering: Mesa on a CPU, the NVIDIA vendor
# library (mounted by the NVIDIA container runtime) on a GPU. GLib for
# OpenCV, which robosuite imports (without it `import robosuite` fails).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libegl1 libegl-mesa0 libgl1 libglvnd0 \
        libglib2.0-0 \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MUJOCO_GL=egl \
    PYOPENGL_PLATFORM=egl \
    OMP_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    EXPAUDIT_PORT=8000

RUN useradd --system --uid 10001 --create-home --home-dir /home/expaudit expaudit \
    && mkdir -p /var/lib/expaudit/frozen /var/lib/expaudit/cells \
    && chown -R expaudit:expaudit /var/lib/expaudit

WORKDIR /app
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/usr/local/lib/expaudit/healthcheck.py"]

# docker/entrypoint.sh and docker/healthcheck.py are copied by each stage
# last, so an edit to them rebuilds no dependency layer.
ENTRYPOINT ["/usr/local/lib/expaudit/entrypoint.sh"]
CMD ["web"]

# ----------------------------------------------------------------- wheels ---
FROM base AS wheels

# A C compiler and the kernel headers (evdev includes linux/input.h); the slim
# image already has Python's headers.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*

# Every extra either image may install (a build argument EXTRAS naming others
# reaches this stage too); only pyproject.toml is read, so a change to the
# sources rebuilds no wheel.
ARG EXTRAS=sim,policies
COPY pyproject.toml /tmp/build/pyproject.toml
COPY docker/build_wheels.py /tmp/build/build_wheels.py
RUN python /tmp/build/build_wheels.py /tmp/build/pyproject.toml "${EXTRAS}" /wheels

# ------------------------------------------------------------- runner-gpu ---
FROM base AS runner-gpu

# The NVIDIA container runtime (the GPU given by `--gpus` or a compose device
# reservation) mounts the driver's compute and EGL libraries (`graphics`), so
# MuJoCo renders on the GPU with MUJOCO_GL=egl and policies run on `cuda`.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics \
    EXPAUDIT_POLICY_DEVICE=cuda

# The CUDA build of torch and the torchvision built for it (PyPI's Linux
# wheels; the CUDA runtime libraries come as nvidia-* wheels, the driver from
# the host). TORCH_INDEX picks another CUDA build for an older driver, e.g.
# https://download.pytorch.org/whl/cu126. Installed before the project so that
# the project's own resolution keeps this torch.
ARG TORCH_INDEX=https://pypi.org/simple
RUN pip install --no-cache-dir --index-url "${TORCH_INDEX}" "torch==2.13.0" "torchvision==0.28.0" \
    && python -c "import torch; assert torch.version.cuda, 'torch is not a CUDA build'"

COPY pyproject.toml README.md ./
COPY expaudit ./expaudit
COPY expaudit_client ./expaudit_client
COPY leaderboard ./leaderboard
COPY benchmark_data ./benchmark_data
COPY service ./service
COPY simulator ./simulator
COPY sandbox ./sandbox
# the docs are published on the site (pyproject.toml data-files)
COPY docs ./docs
# robomimic without its requirements (they pull egl_probe, which builds with
# cmake, and tensorboard, unused); what it imports is in the policies extra.
# With the real torchvision importable, simulator/robomimic_compat.py uses it.
COPY --from=wheels /wheels /tmp/wheels
# hadolint ignore=DL3013
RUN pip install --no-cache-dir --find-links /tmp/wheels ".[sim,policies]" \
    && pip install --no-cache-dir --no-deps "robomimic==0.3.0" \
    && rm -rf /tmp/wheels \
    && python -c "from simulator.robomimic_compat import torchvision_is_real as real; assert real()"

COPY docker/entrypoint.sh docker/healthcheck.py /usr/local/lib/expaudit/
RUN chmod 0755 /usr/local/lib/expaudit/entrypoint.sh

USER 10001:10001
WORKDIR /var/lib/expaudit
CMD ["runner"]

# -------------------------------------------------------------------- app ---
FROM base AS app

# Extras installed with the project: the simulator by default; add
# "policies" (CPU torch, robomimic) for CPU runners of the image policies.
ARG EXTRAS=sim
# Where torch comes from when EXTRAS names policies: PyPI's Linux torch is the
# CUDA build (gigabytes of CUDA libraries); the CPU build does the same work here.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

COPY pyproject.toml README.md ./
COPY expaudit ./expaudit
COPY expaudit_client ./expaudit_client
COPY leaderboard ./leaderboard
COPY benchmark_data ./benchmark_data
COPY service ./service
COPY simulator ./simulator
COPY sandbox ./sandbox
# the docs are published on the site (pyproject.toml data-files)
COPY docs ./docs
# The project itself; its dependency ranges live in pyproject.toml. With the
# policies extra: the CPU torch first, robomimic without its requirements
# last (torchvision, egl_probe, tensorboard; see simulator/robomimic_compat.py).
# Source-only dependencies come as wheels from the `wheels` stage.
COPY --from=wheels /wheels /tmp/wheels
# hadolint ignore=DL3013
RUN case ",${EXTRAS}," in \
        *,policies,*) pip install --no-cache-dir --index-url "${TORCH_INDEX}" "torch==2.13.0" ;; \
        *) ;; \
    esac \
    && pip install --no-cache-dir --find-links /tmp/wheels ".[${EXTRAS}]" \
    && case ",${EXTRAS}," in \
        *,policies,*) pip install --no-cache-dir --no-deps "robomimic==0.3.0" ;; \
        *) ;; \
    esac \
    && rm -rf /tmp/wheels

COPY docker/entrypoint.sh docker/healthcheck.py /usr/local/lib/expaudit/
RUN chmod 0755 /usr/local/lib/expaudit/entrypoint.sh

USER 10001:10001
# A fresh volume mounted on /var/lib/expaudit/frozen (or .../cells) takes this
# owner; the entrypoint seeds the first with the packaged frozen data
# (EXPAUDIT_FROZEN_ROOT); runners append computed cells to the second
# (EXPAUDIT_CELLS_DIR).
WORKDIR /var/lib/expaudit
