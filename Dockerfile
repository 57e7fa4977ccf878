# One image for every role of expaudit; the command picks the role:
#   web     the REST API and the embedded static leaderboard route (gunicorn)
#   worker  RQ worker for audit and publish jobs (and container selectors)
#   runner  `expaudit runner`: rollout jobs (robosuite/MuJoCo; give it the GPU)
# Anything else is executed as given (e.g. `expaudit audit ...`).
FROM python:3.11-slim

# EGL for MuJoCo's offscreen rendering: Mesa on a CPU, the NVIDIA vendor
# library (mounted by the NVIDIA container runtime) on a GPU.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libegl1 libegl-mesa0 libgl1 libglvnd0 \
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

# Extras installed with the project: the simulator by default; add
# "policies" (torch) for runners that execute the image policies.
ARG EXTRAS=sim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY expaudit ./expaudit
COPY leaderboard ./leaderboard
COPY benchmark_data ./benchmark_data
COPY service ./service
COPY runner ./runner
# The project itself; its dependency ranges live in pyproject.toml.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir ".[${EXTRAS}]"

COPY docker/entrypoint.sh docker/healthcheck.py /usr/local/lib/expaudit/
RUN chmod 0755 /usr/local/lib/expaudit/entrypoint.sh \
    && useradd --system --uid 10001 --create-home --home-dir /home/expaudit expaudit \
    && mkdir -p /var/lib/expaudit/frozen \
    && chown -R expaudit:expaudit /var/lib/expaudit

USER 10001:10001
# A fresh volume mounted on /var/lib/expaudit/frozen takes this owner; the
# entrypoint seeds it with the packaged frozen data (EXPAUDIT_FROZEN_ROOT).
WORKDIR /var/lib/expaudit
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/usr/local/lib/expaudit/healthcheck.py"]

ENTRYPOINT ["/usr/local/lib/expaudit/entrypoint.sh"]
CMD ["web"]
