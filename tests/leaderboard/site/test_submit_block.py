"""The index's submit block tells a submitter what the expaudit-client wheel really offers:
every command it shows parses with the client's own parser, and it covers the client's
submit, local check, /input builder and local selector run."""

from __future__ import annotations

import html
import re
import shlex

import pytest

from expaudit_client.cli import PROG, parser
from leaderboard.site.build import build_leaderboard
from tests.support.site_data import make_settings


def _commands(page: str) -> list[list[str]]:
    """The command lines of the submit block's first <pre>, comments and markup dropped."""
    block = page[page.index('<h2 id="submit">'):]
    code = re.search(r"<pre><code>(.*?)</code></pre>", block, re.S).group(1)
    text = html.unescape(re.sub(r"<[^>]+>", "", code))
    return [shlex.split(line, comments=True) for line in text.splitlines() if line.strip()]


def test_every_client_command_of_the_submit_block_parses():
    page = build_leaderboard([], make_settings(), public_url="https://audit.example.org")[
        "index.html"].decode()
    commands = _commands(page)
    assert commands[0][:2] == ["export", "EXPAUDIT_SERVER=https://audit.example.org"]
    shown = set()
    for words in commands[1:]:
        assert words[0] == PROG, words
        args = parser().parse_args(words[1:])
        shown.add(" ".join(filter(None, (args.command, getattr(args, "action", None)))))
    assert {"check", "submit", "selector input", "selector run", "submit-selector"} <= shown


def test_a_command_the_client_lacks_does_not_parse():
    with pytest.raises(SystemExit):
        parser().parse_args(["selector", "demo-input", "in/"])  # the full package's only
