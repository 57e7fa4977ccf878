#!/usr/bin/env bash
# Mutation testing of the metrics, the cell store, auth, sealed, uploads and the sandbox
# (mutmut, in a scratch copy; not part of CI). Usage and groups: docs/testing.md.
#   scripts/mutation_test.sh [GROUP ...] [--max-children N] [--keep DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
exec nice -n 15 .venv/bin/python scripts/mutation_test.py "$@"
