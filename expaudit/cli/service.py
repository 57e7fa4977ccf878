"""`expaudit serve | worker | reconcile | submit | submit-selector | status | submissions |
publish | report | download | token`, and `expaudit selector input`.

Server-side commands read the service settings (`service.settings`) with
flags overriding them; client-side commands talk to `--server` (default
$EXPAUDIT_SERVER or http://127.0.0.1:8000) with `--token` (default
$EXPAUDIT_TOKEN).
"""

from __future__ import annotations

import argparse
import logging
import sys

from expaudit.cli.args import positive_int
from service import defaults
from service.client import ApiError, Client
from service.embedded import serve as serve_embedded
from service.jobs import reconcile as reconcile_store
from service.settings import client_defaults, from_env, parse_queues
from service.worker import build_context, redis_answers, run_worker


def register(subparsers) -> None:
    """Add the service's subcommands to the `expaudit` parser."""
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

    selector = subparsers.add_parser(
        "submit-selector", help="submit a selector program (directory, .tar.gz or image@sha256:...)")
    selector.add_argument("selector", metavar="SELECTOR",
                          help="directory holding selector.py, a .tar.gz of one, or a Docker "
                               "image reference pinned by digest")
    selector.add_argument("--setting", required=True, help="the setting to run it on")
    selector.add_argument("--name", help="display name on the leaderboard")
    selector.add_argument("--public", action="store_true", help="show it on the leaderboard")
    selector.add_argument("--wait", action="store_true", help="wait until published or failed")
    _client_flags(selector)
    selector.set_defaults(handler=_submit_selector)

    mine = subparsers.add_parser("submissions", help="list my submissions, newest first")
    mine.add_argument("--limit", type=positive_int, default=20)
    _client_flags(mine)
    mine.set_defaults(handler=_submissions)

    publish = subparsers.add_parser("publish", help="make one of my submissions public")
    publish.add_argument("submission_id")
    _client_flags(publish)
    publish.set_defaults(handler=_publish)

    report = subparsers.add_parser("report", help="print a submission's verdict and report URL")
    report.add_argument("submission_id")
    report.add_argument("--setting", help="which setting (when it covers several)")
    _client_flags(report)
    report.set_defaults(handler=_report)

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


def extend(subparsers) -> None:
    """Add `selector input` to the `selector` command (registered by the runner's sandbox)."""
    selector = subparsers.choices.get("selector")
    commands = getattr(selector, "subcommands", None)
    if commands is None:
        return
    selector_input = commands.add_parser(
        "input", help="download a setting's /input tree from a server",
        description="Write the exact /input tree a container submission on SETTING is given, "
                    "fetched from --server, into DIR (absent or empty): a selector tried on it "
                    "with `expaudit selector run` runs unchanged on the service.")
    selector_input.add_argument("setting", metavar="SETTING")
    selector_input.add_argument("directory", metavar="DIR")
    _client_flags(selector_input)
    selector_input.set_defaults(handler=_selector_input)


def _server_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help="local directory or s3://bucket[/prefix] ($EXPAUDIT_STORE)")
    parser.add_argument("--redis-url", help="redis://host:port/db ($EXPAUDIT_REDIS_URL)")
    parser.add_argument("--catalog", help="directory of settings to serve ($EXPAUDIT_CATALOG)")
    parser.add_argument("--frozen-root", help="frozen benchmark data directory, where runners "
                                              "append computed cells ($EXPAUDIT_FROZEN_ROOT)")


def _client_flags(parser: argparse.ArgumentParser) -> None:
    server, token = client_defaults()
    parser.add_argument("--server", default=server, help="service URL ($EXPAUDIT_SERVER)")
    parser.add_argument("--token", default=token, help="bearer token ($EXPAUDIT_TOKEN)")


def _settings(args):
    overrides = {key: getattr(args, attr) for key, attr in
                 (("store", "store"), ("redis_url", "redis_url"), ("catalog", "catalog"),
                  ("frozen_root", "frozen_root"))
                 if getattr(args, attr, None)}
    if getattr(args, "queues", None):
        overrides["worker_queues"] = parse_queues(args.queues)
    return from_env().with_overrides(overrides)


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _serve(args) -> int:
    def ready(url: str, token_note: str) -> None:
        print(f"expaudit is serving at {url}/  (API docs: {url}/api/v1/docs; {token_note})",
              flush=True)

    def runner(note: str) -> None:
        print(note, flush=True)

    _configure_logging()
    settings = _settings(args)
    with redis_answers(settings.redis_url):
        return serve_embedded(settings, host=args.host, port=args.port, web_workers=args.workers,
                              on_ready=ready, on_runner=runner)


def _worker(args) -> int:
    _configure_logging()
    settings = _settings(args)
    with redis_answers(settings.redis_url):
        run_worker(settings, burst=args.burst)
    return 0


def _reconcile(args) -> int:
    settings = _settings(args)
    with redis_answers(settings.redis_url):
        context = build_context(settings)
        result = reconcile_store(context.store, context.redis)
    print(f"open submissions: {result.open}; re-enqueued: {len(result.enqueued)}"
          + (f" ({', '.join(result.enqueued)})" if result.enqueued else "")
          + ("; leaderboard rebuild enqueued" if result.rebuild_enqueued else ""))
    return 0


def _client(args):
    return Client(args.server, args.token)


def _api_call(function) -> int:
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
        return _follow(client, status, args.wait)
    return _api_call(run)


def _submit_selector(args) -> int:
    def run() -> int:
        client = _client(args)
        status = client.submit_selector(args.selector, args.setting, name=args.name,
                                        public=args.public)
        return _follow(client, status, args.wait)
    return _api_call(run)


def _follow(client, status: dict, wait: bool) -> int:
    """Show the accepted submission; with `wait`, follow it and print each report's verdict
    and URL once published."""
    _show(status)
    print(f"status: {client.server}{status['status_url']}")
    if not wait:
        return 0
    final = client.wait(status["id"], on_update=_show, seen=status)
    if final["state"] != "published":
        return 1
    _print_reports(client, final)
    return 0


def _report_url(client, status: dict, setting: str) -> str:
    if status.get("public"):
        return client.public_report_url(status["id"], setting)
    return f"{client.server}{status['report_urls'][setting]['html']}"


def _print_reports(client, status: dict, only: str | None = None) -> None:
    """One line per setting: the verdict label and sentence, A, and where the report is."""
    for setting in status.get("report_urls", {}):
        if only is not None and setting != only:
            continue
        report = client.report(status["id"], setting)
        verdict = report.get("verdict") or {}
        advantage = (report.get("reference") or {}).get("advantage")
        a_text = "n/a" if advantage is None else f"{advantage:.3f}"
        print(f"{setting}: {verdict.get('label', 'no verdict')} (A = {a_text}): "
              f"{verdict.get('text', '')}")
        print(f"  report: {_report_url(client, status, setting)}")
    if not status.get("public"):
        print(f"  private: the report needs your token; `expaudit publish {status['id']}` "
              "puts it on the public leaderboard")


def _submissions(args) -> int:
    def run() -> int:
        listed = _client(args).submissions(args.limit)
        for status in listed:
            line = (f"{status['id']}  {status['state']:<9}  "
                    f"{'public ' if status.get('public') else 'private'}  "
                    f"{status.get('kind', 'scores'):<9}  {','.join(status['settings'])}  "
                    f"{status.get('name', '')}")
            print(line)
        if not listed:
            print("no submissions yet")
        return 0
    return _api_call(run)


def _publish(args) -> int:
    def run() -> int:
        client = _client(args)
        status = client.publish(args.submission_id)
        _show(status)
        for setting in status["settings"]:
            print(f"  public report ({setting}): "
                  f"{client.public_report_url(status['id'], setting)}"
                  + ("" if status["state"] == "published" else " (once published)"))
        return 0
    return _api_call(run)


def _report(args) -> int:
    def run() -> int:
        client = _client(args)
        status = client.status(args.submission_id)
        if args.setting and args.setting not in status["settings"]:
            print(f"error: submission {status['id']} covers {status['settings']}, not "
                  f"'{args.setting}'", file=sys.stderr)
            return 2
        if not status.get("report_urls"):
            _show(status)
            print("no report yet")
            return 1
        _print_reports(client, status, args.setting)
        return 0
    return _api_call(run)


def _selector_input(args) -> int:
    def run() -> int:
        client = _client(args)
        target = client.selector_input(args.setting, args.directory)
        files = sum(1 for p in target.rglob("*") if p.is_file())
        print(f"{target}: the /input tree of {args.setting} ({files} files)")
        return 0
    return _api_call(run)


def _status(args) -> int:
    def run() -> int:
        client = _client(args)
        status = client.status(args.submission_id)
        _show(status)
        for setting in status.get("report_urls", {}):
            print(f"  report {setting}: {_report_url(client, status, setting)}")
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
