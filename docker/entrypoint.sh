#!/bin/sh
# Container entrypoint: the first argument picks the role of this container.
#   web     gunicorn serving the Flask app factory (REST API, /healthz, /metrics)
#   worker  `expaudit worker`: reconciler + RQ worker on the publish and audit queues
#   runner  RQ worker on the rollout queue (simulator; the GPU when given one)
# Any other command runs as given, e.g. `expaudit audit --help`.
set -eu

role="${1:-web}"
state_dir="${EXPAUDIT_STATE_DIR:-/tmp}"
# The healthcheck reads the role from here (it does not inherit this environment).
printf '%s\n' "$role" > "$state_dir/expaudit-role"

case "$role" in
  web)
    shift || true
    exec gunicorn \
      --bind "0.0.0.0:${EXPAUDIT_PORT:-8000}" \
      --workers "${EXPAUDIT_WEB_WORKERS:-2}" \
      --timeout "${EXPAUDIT_WEB_TIMEOUT_S:-60}" \
      --access-logfile - \
      "$@" \
      "service.app:create_app()"
    ;;
  worker)
    shift || true
    : "${EXPAUDIT_REDIS_URL:?EXPAUDIT_REDIS_URL must be set for the worker role}"
    # reconciles the store against the queues, then works the publish and audit queues
    exec expaudit worker "$@"
    ;;
  runner)
    shift || true
    : "${EXPAUDIT_REDIS_URL:?EXPAUDIT_REDIS_URL must be set for the runner role}"
    exec rq worker --url "$EXPAUDIT_REDIS_URL" "$@" \
      ${EXPAUDIT_RUNNER_QUEUES:-rollout}
    ;;
  *)
    exec "$@"
    ;;
esac
