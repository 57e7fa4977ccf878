#!/usr/bin/env python
"""Regenerate the generated block of docs/selector_protocol.md (settings, schemas, limits).

    scripts/selector_protocol_doc.py           # rewrite the block from the code and data
    scripts/selector_protocol_doc.py --check   # exit 1 when the committed block is stale

The block is written by `service.catalog.protocol_doc.generated_block` from the /input
schemas, the frozen tables and the limits the service enforces; run this after changing any
of them (tests/service/catalog/test_protocol_doc.py fails until the doc is regenerated).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from service.catalog.protocol_doc import (  # noqa: E402
    DOC, committed_block, generated_block, write_doc,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare the committed block with the generated one")
    args = parser.parse_args()
    if args.check:
        if committed_block(DOC) != generated_block():
            print(f"{DOC.relative_to(REPO)}: the generated block is stale; run "
                  f"scripts/selector_protocol_doc.py", file=sys.stderr)
            return 1
        print(f"{DOC.relative_to(REPO)}: up to date")
        return 0
    changed = write_doc(DOC)
    print(f"{DOC.relative_to(REPO)}: {'rewritten' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
