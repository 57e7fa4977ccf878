#!/usr/bin/env bash
# Run the test suite; pytest's exit code 5 (no tests collected) is a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export MUJOCO_GL="${MUJOCO_GL:-egl}"
.venv/bin/python -m pytest "$@"
rc=$?
if [[ $rc -eq 5 ]]; then
  echo "run_tests: pytest collected no tests; failing" >&2
  exit 1
fi
exit $rc
