"""Makes /output/scores.csv a symlink out of /output (and tries a hard link), then exits 0."""
import os

out = os.environ["EXPAUDIT_OUTPUT"]
try:
    os.link("/input/setting.json", os.path.join(out, "hardlink.json"))
    print("hard link made")
except OSError as exc:
    print(f"hard link refused: {exc}")
os.symlink(os.environ.get("HOSTILE_TARGET", "/etc/passwd"), os.path.join(out, "scores.csv"))
os.mkfifo(os.path.join(out, "pipe"))
