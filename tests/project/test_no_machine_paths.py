"""The project speaks of itself only: no committed data, page or doc holds a path of the
machine it was made on (a report's `source` is where its features sit in the bank)."""

from __future__ import annotations

import re
import subprocess

from tests.support.paths import REPO_ROOT

TEXT = (".json", ".md", ".html", ".csv", ".jsonl", ".yaml", ".yml", ".txt")
MACHINE_PATH = re.compile(r"""(?<![\w.$}/-])/(?:work|home|root|Users|mnt|scratch)/[\w.-]+""")
"""An absolute path under a machine's own folders; `/tmp` and container paths (`/input`,
`/output`, `/app`) are the product's own and allowed."""


def committed_text_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0")
            if name.endswith(TEXT) and (REPO_ROOT / name).is_file()]


def test_the_pattern_catches_a_machine_path():
    assert MACHINE_PATH.search('"source": "/work/checkout/benchmark_data/frozen"')
    assert MACHINE_PATH.search("from /home/lab/data")
    assert not MACHINE_PATH.search("GET /api/v1/settings and /input/setting.json, $HOME/work/x")


def test_no_committed_text_file_holds_a_machine_path():
    found = []
    for name in committed_text_files():
        text = (REPO_ROOT / name).read_text(errors="replace")
        found += [f"{name}: {match.group(0)}" for match in MACHINE_PATH.finditer(text)]
    assert not found, found[:20]
