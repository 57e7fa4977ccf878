"""The command line of every generated documentation page: write the page from the frozen data.

`python -m benchmark_data.pages.replay_settings` and `python -m benchmark_data.pages.policy_settings`
differ only in the page they write and how; both take `--out` and `--root`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def page_main(write_doc: Callable[[Path, object], Path], default_out: str, argv=None) -> int:
    """Parse `--out` (default `default_out`) and `--root`, write the page, say where."""
    parser = argparse.ArgumentParser(description=f"write {default_out} from the frozen data")
    parser.add_argument("--out", default=default_out, help=f"page to write (default {default_out})")
    parser.add_argument("--root", default=None, help="frozen data root (default: the package's)")
    args = parser.parse_args(argv)
    print(f"wrote {write_doc(Path(args.out), args.root)}")
    return 0
