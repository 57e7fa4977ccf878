#!/bin/sh
# Container entrypoint: the first argument picks the role of this container.
#   web     gunicorn serving the Flask app factory (REST API, /healthz, /metrics: the sum
#           of its processes, through $PROMETHEUS_MULTIPROC_DIR)
#   worker  `expaudit worker`: reconciler + RQ worker on the publish and audit queues
#           (scores files; no selector runs here, no Docker socket needed)
#   runner  `expaudit runner`: the selectors queue (container submissions: each
#           selector a sibling container on the Docker socket it alone holds) and
#           the rollouts queue (simulator; the GPU when given one)
#   seed    only copy the frozen data into $EXPAUDIT_FROZEN_ROOT (see below), then exit
# Any other command runs as given, e.g. `expaudit audit --help`.
#
# With EXPAUDIT_FROZEN_ROOT set (compose: a volume shared by web, worker and
# runner), the frozen data shipped in the image is copied there on the first
# start, under a lock so that roles starting together copy it once. Later
# starts leave the directory alone (it may hold cells runners computed before
# they went to $EXPAUDIT_CELLS_DIR, which are still read).
set -eu

role="${1:-web}"
state_dir="${EXPAUDIT_STATE_DIR:-/tmp}"
# The healthcheck reads the role from here (it does not inherit this environment).
printf '%s\n' "$role" > "$state_dir/expaudit-role"

seed_frozen_root() {
  target="${EXPAUDIT_FROZEN_ROOT:-}"
  [ -n "$target" ] || return 0
  mkdir -p "$target"
  source_dir="$(python -c 'from benchmark_data.paths import FROZEN_ROOT; print(FROZEN_ROOT)')"
  (
    flock 9
    if [ ! -e "$target/.seeded" ]; then
      cp -R "$source_dir/." "$target/"
      printf 'seeded from %s\n' "$source_dir" > "$target/.seeded"
      echo "entrypoint: frozen data copied to $target" >&2
    fi
  ) 9>"$target/.seed.lock"
}

case "$role" in
  web)
    shift || true
    seed_frozen_root
    # Prometheus multiprocess mode: each gunicorn process writes its counts to files here
    # and a scrape of /metrics adds up all of them (a scrape answered by one process alone
    # went up and down); the files of an earlier start are removed, never anything else.
    PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$state_dir/expaudit-metrics}"
    export PROMETHEUS_MULTIPROC_DIR
    mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
    find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -type f -name '*.db' -delete
    # --config: the service's gunicorn settings (forwarded SCRIPT_NAME/PATH_INFO headers
    # dropped), whatever the working directory holds
    exec gunicorn \
      --config python:service.process.gunicorn_conf \
      --bind "0.0.0.0:${EXPAUDIT_PORT:-8000}" \
      --workers "${EXPAUDIT_WEB_WORKERS:-2}" \
      --timeout "${EXPAUDIT_WEB_TIMEOUT_S:-60}" \
      --access-logfile - \
      "$@" \
      "service.web.app:create_app()"
    ;;
  worker)
    shift || true
    : "${EXPAUDIT_REDIS_URL:?EXPAUDIT_REDIS_URL must be set for the worker role}"
    seed_frozen_root
    # reconciles the store against the queues, then works the publish and audit queues
    exec expaudit worker "$@"
    ;;
  runner)
    shift || true
    : "${EXPAUDIT_REDIS_URL:?EXPAUDIT_REDIS_URL must be set for the runner role}"
    seed_frozen_root
    # runs the selectors of container submissions in $EXPAUDIT_SANDBOX and stores
    # the cells it computes in the object store ($EXPAUDIT_STORE), which the workers read
    exec expaudit runner "$@"
    ;;
  seed)
    seed_frozen_root
    ;;
  *)
    exec "$@"
    ;;
esac
