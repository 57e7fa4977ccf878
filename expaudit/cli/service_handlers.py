"""The handlers of `expaudit serve | worker | reconcile` and of the client commands (`submit`,
`status`, `report`, `token create` ...).

They load the embedded web app, Redis, the worker and the HTTP client, so
the command's parser (`service`) loads this module only when one of them
runs. The defaults the parser leaves unset (port, web processes, server URL
and token) are read here from the service config.
"""

from __future__ import annotations

import logging
import sys

from expaudit.cli.service_client import api_call, client_for
from leaderboard.site.readout_report import render_readout_summary
from service.process import defaults, from_env, parse_queues, redis_answers
from service.serve import serve as serve_embedded
from service.queues import reconcile as reconcile_store
from service.queues import build_context, run_worker


def _config(args):
    overrides = {key: getattr(args, attr) for key, attr in
                 (("store", "store"), ("redis_url", "redis_url"), ("catalog", "catalog"),
                  ("frozen_root", "frozen_root"))
                 if getattr(args, attr, None)}
    if getattr(args, "queues", None):
        overrides["worker_queues"] = parse_queues(args.queues)
    return from_env().with_overrides(overrides)


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _or_default(value, default):
    return default if value is None else value


def _serve(args) -> int:
    def ready(url: str, token_note: str) -> None:
        print(f"expaudit is serving at {url}/  (API docs: {url}/api/v1/docs; {token_note})",
              flush=True)

    def runner(note: str) -> None:
        print(note, flush=True)

    _configure_logging()
    config = _config(args)
    with redis_answers(config.redis_url):
        return serve_embedded(config, host=args.host,
                              port=_or_default(args.port, defaults.DEFAULT_PORT),
                              web_workers=_or_default(args.workers, defaults.GUNICORN_WORKERS),
                              on_ready=ready, on_runner=runner, metrics_port=args.metrics_port,
                              metrics_host=_or_default(args.metrics_host, defaults.METRICS_HOST),
                              public_metrics=args.public_metrics)


def _worker(args) -> int:
    _configure_logging()
    config = _config(args)
    with redis_answers(config.redis_url):
        run_worker(config, burst=args.burst)
    return 0


def _reconcile(args) -> int:
    config = _config(args)
    with redis_answers(config.redis_url):
        context = build_context(config)
        result = reconcile_store(context.store, context.redis)
    print(f"open submissions: {result.open}; re-enqueued: {len(result.enqueued)}"
          + (f" ({', '.join(result.enqueued)})" if result.enqueued else "")
          + ("; leaderboard rebuild enqueued" if result.rebuild_enqueued else ""))
    return 0


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
        client = client_for(args)
        status = client.submit(args.file, args.setting, name=args.name, public=args.public,
                               input=args.input)
        return _follow(client, status, args.wait)
    return api_call(run, args)


def _submit_selector(args) -> int:
    def run() -> int:
        client = client_for(args)
        status = client.submit_selector(args.selector, args.setting, name=args.name,
                                        public=args.public)
        return _follow(client, status, args.wait)
    return api_call(run, args)


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


def _print_readout(setting: str, report: dict) -> None:
    """A readout report's headline numbers and tests (`expaudit readout audit`'s lines)."""
    for line in render_readout_summary(report).splitlines():
        print(f"{setting}: {line}" if not line.startswith(" ") else line)


def _print_reports(client, status: dict, only: str | None = None) -> None:
    """One line per setting: the verdict label and sentence, A, and where the report is (a
    readout setting: its headline numbers and tests instead of a verdict)."""
    for setting in status.get("report_urls", {}):
        if only is not None and setting != only:
            continue
        report = client.report(status["id"], setting)
        if "representations" in report:
            _print_readout(setting, report)
            print(f"  report: {_report_url(client, status, setting)}")
            continue
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
        listed = client_for(args).submissions(args.limit)
        for status in listed:
            line = (f"{status['id']}  {status['state']:<9}  "
                    f"{'public ' if status.get('public') else 'private'}  "
                    f"{status.get('kind', 'scores'):<9}  {','.join(status['settings'])}  "
                    f"{status.get('name', '')}")
            print(line)
        if not listed:
            print("no submissions yet")
        return 0
    return api_call(run, args)


def _publish(args) -> int:
    def run() -> int:
        client = client_for(args)
        status = client.publish(args.submission_id)
        _show(status)
        for setting in status["settings"]:
            print(f"  public report ({setting}): "
                  f"{client.public_report_url(status['id'], setting)}"
                  + ("" if status["state"] == "published" else " (once published)"))
        return 0
    return api_call(run, args)


def _withdraw(args) -> int:
    def run() -> int:
        status = client_for(args).withdraw(args.submission_id)
        _show(status)
        print("  private: off the public leaderboard from its next rebuild")
        return 0
    return api_call(run, args)


def _rename(args) -> int:
    def run() -> int:
        status = client_for(args).rename(args.submission_id, args.name)
        _show(status)
        print(f"  name: {status['name']}" + ("  (public: the leaderboard shows it from its next "
                                             "rebuild)" if status["public"] else ""))
        return 0
    return api_call(run, args)


def _report(args) -> int:
    def run() -> int:
        client = client_for(args)
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
    return api_call(run, args)


def _status(args) -> int:
    def run() -> int:
        client = client_for(args)
        status = client.status(args.submission_id)
        _show(status)
        for setting in status.get("report_urls", {}):
            print(f"  report {setting}: {_report_url(client, status, setting)}")
        return 0
    return api_call(run, args)


def _download(args) -> int:
    def run() -> int:
        for path in client_for(args).download_all(args.setting, args.what, args.format, args.out):
            print(path)
        return 0
    return api_call(run, args)


def _run_log(args) -> int:
    def run() -> int:
        record = client_for(args).selector_run(args.submission_id)
        print(f"{args.submission_id}  {record.get('status')}  exit code {record.get('exit_code')}"
              f"  {record.get('wall_seconds')} s" + (f"  {record['reason']}"
                                                      if record.get("reason") else ""))
        for stream in ("stdout", "stderr"):
            tail = record.get(f"{stream}_tail") or ""
            print(f"--- {stream} (last {len(tail)} characters)")
            if tail:
                print(tail.rstrip("\n"))
        return 0 if record.get("status") == "ok" else 1
    return api_call(run, args)


def _token_create(args) -> int:
    def run() -> int:
        info = client_for(args).create_token(args.name, args.owner, admin=args.admin)
        print(f"token id: {info['token_id']}  name: {info['name']}  owner: {info['owner']}",
              file=sys.stderr)
        print(info["token"])
        return 0
    return api_call(run, args)


HANDLERS = {
    "serve": _serve,
    "worker": _worker,
    "reconcile": _reconcile,
    "submit": _submit,
    "submit-selector": _submit_selector,
    "submissions": _submissions,
    "publish": _publish,
    "withdraw": _withdraw,
    "rename": _rename,
    "report": _report,
    "status": _status,
    "download": _download,
    "run-log": _run_log,
    "token create": _token_create,
}
"""The handler of each service command, by the `service_command` its parser sets."""
