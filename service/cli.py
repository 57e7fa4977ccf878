"""`expaudit serve | worker | reconcile | submit | status | download | token`.

Server-side commands read the service settings (`service.settings`) with
flags overriding them; client-side commands talk to `--server` (default
$EXPAUDIT_SERVER or http://127.0.0.1:8000) with `--token` (default
$EXPAUDIT_TOKEN).
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    """Add the service's subcommands to the `expaudit` parser."""
    from service import defaults

    serve = subparsers.add_parser("serve", help="run the web service and a worker (embedded defaults)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=defaults.DEFAULT_PORT)
    _server_flags(serve)
    serve.add_argument("--workers", type=int, default=defaults.GUNICORN_WORKERS,
                       help="gunicorn web processes")
    serve.set_defaults(handler=_serve)

    worker = subparsers.add_parser("worker", help="run one RQ worker (audits and publishing)")
    _server_flags(worker)
    worker.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    worker.add_argument("--queues", help="queues to serve, comma-separated, from publish, audit, "
                                         "selectors (default publish,audit; "
                                         "$EXPAUDIT_WORKER_QUEUES)")
    worker.set_defaults(handler=_worker)

    reconcile = subparsers.add_parser("reconcile", help="re-enqueue every submission that is not final")
    _server_flags(reconcile)
    reconcile.set_defaults(handler=_reconcile)

    submit = subparsers.add_parser("submit", help="upload a scores file (CSV, Parquet or JSON)")
    submit.add_argument("file")
    submit.add_argument("--setting", action="append", default=[],
                        help="setting id (repeat, or use a setting_id column in the file)")
    submit.add_argument("--name", help="display name on the leaderboard")
    submit.add_argument("--public", action="store_true", help="show it on the leaderboard")
    submit.add_argument("--wait", action="store_true", help="wait until published or failed")
    _client_flags(submit)
    submit.set_defaults(handler=_submit)

    status = subparsers.add_parser("status", help="show a submission's state")
    status.add_argument("submission_id")
    _client_flags(status)
    status.set_defaults(handler=_status)

    download = subparsers.add_parser("download", help="download a setting's data")
    download.add_argument("setting")
    download.add_argument("--what", choices=["outcomes", "scenes", "experiences"], default="outcomes")
    download.add_argument("--format", choices=["parquet", "csv", "npz", "json"], default="parquet")
    download.add_argument("--out", default=".", help="directory to write into")
    _client_flags(download)
    download.set_defaults(handler=_download)

    token = subparsers.add_parser("token", help="manage tokens (admin)")
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = token_sub.add_parser("create", help="issue a token (printed once)")
    create.add_argument("--name", required=True)
    create.add_argument("--admin", action="store_true")
    _client_flags(create)
    create.set_defaults(handler=_token_create)


def _server_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help="local directory or s3://bucket[/prefix] ($EXPAUDIT_STORE)")
    parser.add_argument("--redis-url", help="redis://host:port/db ($EXPAUDIT_REDIS_URL)")
    parser.add_argument("--catalog", help="directory of settings to serve ($EXPAUDIT_CATALOG)")
    parser.add_argument("--frozen-root", help="frozen benchmark data directory, where runners "
                                              "append computed cells ($EXPAUDIT_FROZEN_ROOT)")


def _client_flags(parser: argparse.ArgumentParser) -> None:
    from service.settings import client_defaults

    server, token = client_defaults()
    parser.add_argument("--server", default=server, help="service URL ($EXPAUDIT_SERVER)")
    parser.add_argument("--token", default=token, help="bearer token ($EXPAUDIT_TOKEN)")


def _settings(args):
    from service.settings import from_env, parse_queues

    overrides = {key: getattr(args, attr) for key, attr in
                 (("store", "store"), ("redis_url", "redis_url"), ("catalog", "catalog"),
                  ("frozen_root", "frozen_root"))
                 if getattr(args, attr, None)}
    if getattr(args, "queues", None):
        overrides["worker_queues"] = parse_queues(args.queues)
    return from_env().with_overrides(overrides)


def _configure_logging() -> None:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _serve(args) -> int:
    from service.embedded import serve

    def ready(url: str, token_note: str) -> None:
        print(f"expaudit is serving at {url}/  (API docs: {url}/api/v1/docs; {token_note})",
              flush=True)

    def runner(note: str) -> None:
        print(note, flush=True)

    _configure_logging()
    return serve(_settings(args), host=args.host, port=args.port, web_workers=args.workers,
                 on_ready=ready, on_runner=runner)


def _worker(args) -> int:
    from service.worker import run_worker

    _configure_logging()
    run_worker(_settings(args), burst=args.burst)
    return 0


def _reconcile(args) -> int:
    from service.jobs import reconcile
    from service.worker import build_context

    context = build_context(_settings(args))
    result = reconcile(context.store, context.redis)
    print(f"open submissions: {result.open}; re-enqueued: {len(result.enqueued)}"
          + (f" ({', '.join(result.enqueued)})" if result.enqueued else "")
          + ("; leaderboard rebuild enqueued" if result.rebuild_enqueued else ""))
    return 0


def _client(args):
    from service.client import Client

    return Client(args.server, args.token)


def _api_call(function) -> int:
    from service.client import ApiError

    try:
        return function()
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for key in ("source", "line", "value"):
            if exc.details.get(key) is not None:
                print(f"  {key}: {exc.details[key]}", file=sys.stderr)
        return 1


def _show(status: dict) -> None:
    line = f"{status['id']}  {status['state']:<9}  {100 * status['progress']:5.1f}%"
    rollouts = status.get("rollouts")
    if rollouts:
        line += f"  rollouts {rollouts['done']}/{rollouts['total']}"
        if rollouts.get("runners") == 0 and rollouts["done"] < rollouts["total"]:
            line += " (no runner connected)"
    if status.get("reason"):
        line += f"  {status['reason']}"
    if status.get("fault"):
        line += f"  (fault: {status['fault']})"
    print(line, flush=True)


def _submit(args) -> int:
    def run() -> int:
        client = _client(args)
        status = client.submit(args.file, args.setting, name=args.name, public=args.public)
        _show(status)
        print(f"status: {client.server}{status['status_url']}")
        if not args.wait:
            return 0
        final = client.wait(status["id"], on_update=_show, seen=status)
        return 0 if final["state"] == "published" else 1
    return _api_call(run)


def _status(args) -> int:
    def run() -> int:
        status = _client(args).status(args.submission_id)
        _show(status)
        for setting, urls in status.get("report_urls", {}).items():
            print(f"  report {setting}: {args.server}{urls['html']}")
        return 0
    return _api_call(run)


def _download(args) -> int:
    def run() -> int:
        path = _client(args).download(args.setting, args.what, args.format, args.out)
        print(path)
        return 0
    return _api_call(run)


def _token_create(args) -> int:
    def run() -> int:
        info = _client(args).create_token(args.name, admin=args.admin)
        print(f"token id: {info['token_id']}  name: {info['name']}", file=sys.stderr)
        print(info["token"])
        return 0
    return _api_call(run)
