"""`expaudit serve | worker | reconcile | submit | submit-selector | status | submissions |
publish | withdraw | rename | report | run-log | download | token`.

Server-side commands read the service config (`service.process.config`) with
flags overriding them; client-side commands talk to `--server` (default
$EXPAUDIT_SERVER or http://127.0.0.1:8000) with `--token` (default
$EXPAUDIT_TOKEN).

This module builds the parser only; the handlers (`service_handlers`) load
the web app, Redis, the worker and the HTTP client, so they are loaded when
a command runs and `expaudit --help` stays light. The defaults that come
from the service config (port, web processes, server URL and token) are
filled in there.
"""

from __future__ import annotations

import argparse

from expaudit.cli.args import client_flags, positive_int


def _run(args: argparse.Namespace) -> int:
    """Run the chosen service command."""
    from expaudit.cli import service_handlers  # deferred: the handlers load the web app and Redis

    return service_handlers.HANDLERS[args.service_command](args)


def register(subparsers) -> None:
    """Add the service's subcommands to the `expaudit` parser."""
    serve = subparsers.add_parser("serve", help="run the web service and a worker (embedded defaults)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int)
    _server_flags(serve)
    serve.add_argument("--workers", type=int, help="gunicorn web processes")
    serve.add_argument("--metrics-port", type=int,
                       help="serve the Prometheus metrics of all web processes on this port "
                            "(off the public port)")
    serve.add_argument("--metrics-host", help="address of the metrics port (default 127.0.0.1)")
    serve.add_argument("--public-metrics", action="store_true",
                       help="also answer /metrics on the public port (off by default)")
    serve.set_defaults(handler=_run, service_command="serve")

    worker = subparsers.add_parser("worker", help="run one RQ worker (audits and publishing)")
    _server_flags(worker)
    worker.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    worker.add_argument("--queues", help="queues to serve, comma-separated, from publish, audit, "
                                         "selectors (default publish,audit; "
                                         "$EXPAUDIT_WORKER_QUEUES)")
    worker.set_defaults(handler=_run, service_command="worker")

    reconcile = subparsers.add_parser("reconcile", help="re-enqueue every submission that is not final")
    _server_flags(reconcile)
    reconcile.set_defaults(handler=_run, service_command="reconcile")

    submit = subparsers.add_parser("submit", help="upload a scores file (CSV, Parquet or JSON), or a "
                                                  "features or predictions file on a readout setting")
    submit.add_argument("file")
    submit.add_argument("--input", choices=["features", "predictions"],
                        help="on a readout setting: what the file holds (default features; Parquet or NPZ)")
    submit.add_argument("--setting", action="append", default=[],
                        help="setting id (repeat, or use a setting_id column in the file)")
    submit.add_argument("--name", help="display name on the leaderboard")
    submit.add_argument("--public", action="store_true", help="show it on the leaderboard")
    submit.add_argument("--wait", action="store_true", help="wait until published or failed")
    client_flags(submit)
    submit.set_defaults(handler=_run, service_command="submit")

    selector = subparsers.add_parser(
        "submit-selector", help="submit a selector program (directory, .tar.gz or image@sha256:...)")
    selector.add_argument("selector", metavar="SELECTOR",
                          help="directory holding selector.py, a .tar.gz of one, or a Docker "
                               "image reference pinned by digest")
    selector.add_argument("--setting", required=True, help="the setting to run it on")
    selector.add_argument("--name", help="display name on the leaderboard")
    selector.add_argument("--public", action="store_true", help="show it on the leaderboard")
    selector.add_argument("--wait", action="store_true", help="wait until published or failed")
    client_flags(selector)
    selector.set_defaults(handler=_run, service_command="submit-selector")

    mine = subparsers.add_parser("submissions", help="list my submissions, newest first")
    mine.add_argument("--limit", type=positive_int, default=20)
    client_flags(mine)
    mine.set_defaults(handler=_run, service_command="submissions")

    publish = subparsers.add_parser("publish", help="make one of my submissions public")
    publish.add_argument("submission_id")
    client_flags(publish)
    publish.set_defaults(handler=_run, service_command="publish")

    withdraw = subparsers.add_parser("withdraw", help="take one of my submissions off the public "
                                                      "leaderboard (the admin token: any)")
    withdraw.add_argument("submission_id")
    client_flags(withdraw)
    withdraw.set_defaults(handler=_run, service_command="withdraw")

    rename = subparsers.add_parser("rename", help="give one of my submissions a new display name")
    rename.add_argument("submission_id")
    rename.add_argument("name", help="1-100 letters, digits, spaces or .,:()+/-")
    client_flags(rename)
    rename.set_defaults(handler=_run, service_command="rename")

    report = subparsers.add_parser("report", help="print a submission's verdict and report URL")
    report.add_argument("submission_id")
    report.add_argument("--setting", help="which setting (when it covers several)")
    client_flags(report)
    report.set_defaults(handler=_run, service_command="report")

    status = subparsers.add_parser("status", help="show a submission's state")
    status.add_argument("submission_id")
    client_flags(status)
    status.set_defaults(handler=_run, service_command="status")

    download = subparsers.add_parser(
        "download", help="download a setting's data (every file it offers, or those named)",
        description="Save the downloads the setting's document lists (GET /api/v1/settings/"
                    "SETTING): outcomes, scenes, experiences, query_images, library, "
                    "base_images, trajectories, selector_input, where the setting has them.")
    download.add_argument("setting", metavar="SETTING", help="the setting id")
    download.add_argument("--what", action="append", metavar="KEY",
                          help="a download to fetch (repeat for several; default: every one "
                               "the setting offers), e.g. outcomes, query_images, library")
    download.add_argument("--format", choices=["parquet", "csv", "npz", "json"],
                          help="format of the tables (outcomes: parquet, csv, npz; scenes and "
                               "experiences: csv, parquet, json); default: each one's own")
    download.add_argument("--out", default=".", help="directory to write into (default: here)")
    client_flags(download)
    download.set_defaults(handler=_run, service_command="download")

    run_log = subparsers.add_parser(
        "run-log", help="show a selector submission's run: status, exit code, stdout, stderr",
        description="Print how the selector of a container submission ran and the tails of its "
                    "stdout and stderr (GET /api/v1/submissions/ID/run; its owner only).")
    run_log.add_argument("submission_id", metavar="SUBMISSION_ID")
    client_flags(run_log)
    run_log.set_defaults(handler=_run, service_command="run-log")

    token = subparsers.add_parser("token", help="manage tokens (admin)")
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = token_sub.add_parser("create", help="issue a token (printed once)")
    create.add_argument("--name", required=True)
    create.add_argument("--owner", required=True,
                        help="who the token is for: the sealed quota and Ladder are per owner, "
                             "shared by all its tokens (a replacement token keeps the owner)")
    create.add_argument("--admin", action="store_true")
    client_flags(create)
    create.set_defaults(handler=_run, service_command="token create")


def _server_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help="local directory or s3://bucket[/prefix] ($EXPAUDIT_STORE)")
    parser.add_argument("--redis-url", help="redis://host:port/db ($EXPAUDIT_REDIS_URL)")
    parser.add_argument("--catalog", help="directory of settings to serve ($EXPAUDIT_CATALOG)")
    parser.add_argument("--frozen-root", help="frozen benchmark data directory, where runners "
                                              "append computed cells ($EXPAUDIT_FROZEN_ROOT)")
