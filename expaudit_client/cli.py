"""`expaudit-client`: the submitter's command, installed by the expaudit-client wheel.

    expaudit-client check scores.csv [--input IN]         the scores file, checked here
    expaudit-client submit scores.csv --setting ID [--public] [--wait] [--input KIND]
    expaudit-client selector input ID IN                  the /input tree a selector gets
    expaudit-client selector run DIR --input IN --output OUT
    expaudit-client submit-selector DIR --setting ID [--public] [--wait]
    expaudit-client status | submissions | publish | withdraw | rename | report | run-log | download

The same words as the full package's `expaudit` command (which adds the
service, the audit and the sandboxed `expaudit selector run`); a name of its
own so that both can be installed side by side. `submit` checks the file here
(format, columns, numbers, repeats; `check` also the ids of an /input tree)
and against the server's upload limit before a byte is sent. The server is
`--server`, else $EXPAUDIT_SERVER; the token `--token`, else $EXPAUDIT_TOKEN.
Every refusal is one line, `expaudit-client COMMAND: error: ...`, exit status 1
(2 for a file refused here, before sending).
"""

from __future__ import annotations

import argparse
import json
import sys

from expaudit_client import __version__
from expaudit_client.errors import (ApiError, BadScoresFile, BadSelectorInput, ClientError,
                                    SelectorNotFound, TargetNotEmpty)
from expaudit_client.http import Client
from expaudit_client.local_run import WALL_SECONDS, run_locally
from expaudit_client.scores_file import SettingIds, check_scores_file

PROG = "expaudit-client"

LOCAL_ERRORS = (BadScoresFile, BadSelectorInput, SelectorNotFound, TargetNotEmpty)
"""Refusals found here, before anything is sent: exit status 2."""


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.handler(args)
    except LOCAL_ERRORS as exc:
        return _fail(args, exc, 2)
    except ClientError as exc:
        return _fail(args, exc, 1)


def _fail(args, exc: Exception, status: int) -> int:
    command = " ".join(filter(None, (args.command, getattr(args, "action", None))))
    print(f"{PROG} {command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
    return status


def _client(args) -> Client:
    return Client.from_env(args.server, args.token)


def _flags(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
    command.add_argument("--server", help="service URL, http(s)://HOST[:PORT] ($EXPAUDIT_SERVER)")
    command.add_argument("--token", help="bearer token ($EXPAUDIT_TOKEN)")
    return command


def parser() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    top = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    top.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser("check", help="check a scores file here, sending nothing")
    check.add_argument("file", metavar="FILE", help="scores file: .csv, .json or .parquet")
    check.add_argument("--input", metavar="IN", help="an /input tree (`selector input`): also "
                                                     "check every id and pair of its setting")
    check.set_defaults(handler=_check)

    submit = _flags(commands.add_parser("submit", help="check and upload a scores file"))
    submit.add_argument("file", metavar="FILE", help="scores file: .csv, .json or .parquet")
    submit.add_argument("--setting", action="append", default=[], metavar="ID",
                        help="setting id (repeat, or use a setting_id column in the file)")
    submit.add_argument("--input", choices=["features", "predictions"],
                        help="on a readout setting: what the file holds (the server's default: "
                             "features); not checked here, the server checks it")
    _submission_flags(submit)
    submit.set_defaults(handler=_submit)

    selector = _flags(commands.add_parser(
        "submit-selector", help="submit a selector (directory, .tar.gz or image@sha256:...)"))
    selector.add_argument("selector", metavar="SELECTOR", help="directory holding selector.py, "
                          "a .tar.gz of one, or a Docker image reference pinned by digest")
    selector.add_argument("--setting", required=True, metavar="ID", help="the setting to run it on")
    _submission_flags(selector)
    selector.set_defaults(handler=_submit_selector)

    for name, help_text in (("status", "show a submission's state"),
                            ("publish", "make one of my submissions public"),
                            ("withdraw", "take one of my submissions off the leaderboard"),
                            ("run-log", "a selector submission's run: status, stdout, stderr")):
        one = _flags(commands.add_parser(name, help=help_text))
        one.add_argument("submission_id", metavar="ID")
        one.set_defaults(handler=_ONE_ID[name])
    rename = _flags(commands.add_parser("rename", help="give a submission a new display name"))
    rename.add_argument("submission_id", metavar="ID")
    rename.add_argument("name", help="1-100 letters, digits, spaces or .,:()+/-")
    rename.set_defaults(handler=_rename)
    report = _flags(commands.add_parser("report", help="a submission's verdict and report URL"))
    report.add_argument("submission_id", metavar="ID")
    report.add_argument("--setting", metavar="ID", help="which setting (when it covers several)")
    report.set_defaults(handler=_report)
    mine = _flags(commands.add_parser("submissions", help="list my submissions, newest first"))
    mine.add_argument("--limit", type=int, default=20)
    mine.set_defaults(handler=_submissions)
    download = _flags(commands.add_parser("download", help="save a setting's downloads"))
    download.add_argument("setting", metavar="ID")
    download.add_argument("--what", action="append", metavar="KEY",
                          help="a download (repeat; default: every one the setting offers)")
    download.add_argument("--format", choices=["parquet", "csv", "npz", "json"],
                          help="format of the tables (default: each one's own)")
    download.add_argument("--out", default=".", help="directory to write into (default: here)")
    download.set_defaults(handler=_download)

    local = commands.add_parser("selector", help="a selector's /input tree and a local run")
    actions = local.add_subparsers(dest="action", metavar="ACTION", required=True)
    tree = _flags(actions.add_parser("input", help="unpack a setting's /input tree from a server"))
    tree.add_argument("setting", metavar="ID")
    tree.add_argument("directory", metavar="IN", help="folder to unpack into (absent or empty)")
    tree.set_defaults(handler=_selector_input)
    run = actions.add_parser(
        "run", help="run DIR/selector.py on an /input tree and check its scores",
        description="Run DIR/selector.py as a plain subprocess (no sandbox) with EXPAUDIT_INPUT "
                    "and EXPAUDIT_OUTPUT set, then check OUT/scores.csv as the service would.")
    run.add_argument("selector_dir", metavar="DIR", help="folder holding selector.py")
    run.add_argument("--input", required=True, metavar="IN", help="the /input tree")
    run.add_argument("--output", required=True, metavar="OUT", help="folder for the output "
                                                                      "(absent or empty)")
    run.add_argument("--wall-seconds", type=float, default=WALL_SECONDS,
                     help=f"wall-clock limit (default {WALL_SECONDS:g}, the service's)")
    run.add_argument("--python", default=sys.executable,
                     help="interpreter that runs selector.py (default: this one)")
    run.set_defaults(handler=_selector_run)
    return top


def _submission_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument("--name", help="display name on the leaderboard")
    command.add_argument("--public", action="store_true", help="show it on the leaderboard")
    command.add_argument("--wait", action="store_true", help="wait until published or failed")


def _check(args) -> int:
    ids = SettingIds.from_input(args.input) if args.input else None
    summary = check_scores_file(args.file, ids=ids)
    print(json.dumps(summary.to_dict()))
    return 0


def _submit(args) -> int:
    client = _client(args)
    if args.input is None:
        _check_scores(client, args)
    status = client.submit(args.file, args.setting, name=args.name, public=args.public,
                           input=args.input)
    return _follow(client, status, args.wait)


def _check_scores(client: Client, args) -> None:
    """Refuse a scores file that breaks the format, or names its settings badly, before
    sending; a file for a readout setting (features or predictions) is the server's to check."""
    try:
        summary = check_scores_file(args.file)
    except BadScoresFile:
        if any(client.setting(s).get("kind") == "readout" for s in args.setting):
            return
        raise
    if not summary.settings and summary.rows is not None and len(args.setting) != 1:
        raise BadScoresFile(f"{args.file}: name exactly one setting (--setting) or add a "
                            f"setting_id column to the file; got {args.setting or 'none'}")
    if summary.settings and args.setting and set(args.setting) != set(summary.settings):
        raise BadScoresFile(f"{args.file}: --setting names {sorted(args.setting)} but the "
                            f"file's setting_id column holds {sorted(summary.settings)}")


def _submit_selector(args) -> int:
    client = _client(args)
    status = client.submit_selector(args.selector, args.setting, name=args.name,
                                    public=args.public)
    return _follow(client, status, args.wait)


def _follow(client: Client, status: dict, wait: bool) -> int:
    _show(status)
    print(f"status: {client.server}{status['status_url']}")
    if not wait:
        return 0
    final = client.wait(status["id"], on_update=_show, seen=status)
    if final["state"] != "published":
        return 1
    _print_reports(client, final)
    return 0


def _show(status: dict) -> None:
    line = f"{status['id']}  {status['state']:<9}  {100 * status['progress']:5.1f}%"
    rollouts = status.get("rollouts")
    if rollouts:
        line += f"  rollouts {rollouts['done']}/{rollouts['total']}"
    if status.get("reason"):
        line += f"  {status['reason']}"
    print(line, flush=True)


def _print_reports(client: Client, status: dict, only: str | None = None) -> None:
    """One line per setting: the verdict label and sentence, A, and where the report is."""
    for setting in status.get("report_urls", {}):
        if only is not None and setting != only:
            continue
        report = client.report(status["id"], setting)
        verdict = report.get("verdict") or {}
        advantage = (report.get("reference") or {}).get("advantage")
        shown = "n/a" if advantage is None else f"{advantage:.3f}"
        print(f"{setting}: {verdict.get('label', 'no verdict')} (A = {shown}): "
              f"{verdict.get('text', '')}")
        url = (client.public_report_url(status["id"], setting) if status.get("public")
               else f"{client.server}{status['report_urls'][setting]['html']}")
        print(f"  report: {url}")
    if not status.get("public"):
        print(f"  private: the report needs your token; `{PROG} publish {status['id']}` puts "
              "it on the public leaderboard")


def _status(args) -> int:
    _show(_client(args).status(args.submission_id))
    return 0


def _publish(args) -> int:
    client = _client(args)
    status = client.publish(args.submission_id)
    _show(status)
    for setting in status["settings"]:
        print(f"  public report ({setting}): {client.public_report_url(status['id'], setting)}")
    return 0


def _withdraw(args) -> int:
    _show(_client(args).withdraw(args.submission_id))
    return 0


def _rename(args) -> int:
    status = _client(args).rename(args.submission_id, args.name)
    _show(status)
    print(f"  name: {status['name']}")
    return 0


def _run_log(args) -> int:
    record = _client(args).selector_run(args.submission_id)
    print(f"{args.submission_id}  {record.get('status')}  exit code {record.get('exit_code')}"
          + (f"  {record['reason']}" if record.get("reason") else ""))
    for stream in ("stdout", "stderr"):
        tail = record.get(f"{stream}_tail") or ""
        print(f"--- {stream} (last {len(tail)} characters)")
        if tail:
            print(tail.rstrip("\n"))
    return 0 if record.get("status") == "ok" else 1


def _report(args) -> int:
    client = _client(args)
    status = client.status(args.submission_id)
    if not status.get("report_urls"):
        _show(status)
        print("no report yet")
        return 1
    _print_reports(client, status, args.setting)
    return 0


def _submissions(args) -> int:
    listed = _client(args).submissions(args.limit)
    for status in listed:
        print(f"{status['id']}  {status['state']:<9}  "
              f"{'public ' if status.get('public') else 'private'}  "
              f"{','.join(status['settings'])}  {status.get('name', '')}")
    if not listed:
        print("no submissions yet")
    return 0


def _download(args) -> int:
    for path in _client(args).download_all(args.setting, args.what, args.format, args.out):
        print(path)
    return 0


def _selector_input(args) -> int:
    target = _client(args).selector_input(args.setting, args.directory)
    files = sum(1 for p in target.rglob("*") if p.is_file())
    print(f"{target}: the /input tree of {args.setting} ({files} files)")
    return 0


def _selector_run(args) -> int:
    """Run, check, print the result as JSON; exit 0 only when the scores are valid."""
    result = run_locally(args.selector_dir, args.input, args.output,
                         wall_seconds=args.wall_seconds, python=args.python)
    print(json.dumps(result.to_dict(), indent=2))
    return 0 if result.ok else 1


_ONE_ID = {"status": _status, "publish": _publish, "withdraw": _withdraw, "run-log": _run_log}
"""The handlers of the commands that take one submission id."""


if __name__ == "__main__":
    sys.exit(main())
