"""Build wheels for the dependencies that PyPI ships only as source (image build stage `wheels`).

Resolves the project's dependencies with the given extras (`pip install
--dry-run --report`, metadata only), then builds a wheel for every resolved
distribution that comes as a source archive (robosuite -> pynput -> evdev
needs a C compiler and the kernel headers). The image's final stages install
with `--find-links` on these wheels, so they need no compiler.

    python build_wheels.py PYPROJECT EXTRAS WHEEL_DIR     (EXTRAS: "sim,policies")
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path


def requirements(pyproject: Path, extras: str) -> list[str]:
    """The project's own requirements plus those of each named extra (pure)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    wanted = [name.strip() for name in extras.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(optional))
    if unknown:
        raise SystemExit(f"build_wheels: unknown extra(s) {', '.join(unknown)} in EXTRAS")
    return list(project.get("dependencies", [])) + [req for name in wanted for req in optional[name]]


def source_only(report: dict) -> list[str]:
    """`name==version` of each resolved distribution whose download is not a wheel (pure)."""
    pins = []
    for item in report.get("install", []):
        url = item.get("download_info", {}).get("url", "")
        if url and not url.split("#", 1)[0].endswith(".whl"):
            meta = item["metadata"]
            pins.append(f"{meta['name']}=={meta['version']}")
    return sorted(pins)


def main(pyproject: str, extras: str, wheel_dir: str) -> int:
    Path(wheel_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        reqs = Path(work) / "requirements.txt"
        reqs.write_text("\n".join(requirements(Path(pyproject), extras)) + "\n", encoding="utf-8")
        report_path = Path(work) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
                        "--quiet", "--report", str(report_path), "-r", str(reqs)], check=True)
        pins = source_only(json.loads(report_path.read_text(encoding="utf-8")))
    print(f"build_wheels: source-only distributions: {', '.join(pins) or 'none'}", flush=True)
    if pins:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", wheel_dir,
                        *pins], check=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    sys.exit(main(*sys.argv[1:]))
