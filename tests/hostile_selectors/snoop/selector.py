"""Looks for outcome files: a planted host file, the project checkout, /proc of PID 1, /input."""
import os

secret_path = os.environ["HOSTILE_SECRET_PATH"]
checkout = os.environ["HOSTILE_CHECKOUT"]
tries = [secret_path, "/proc/1/root" + secret_path, "/proc/1/environ", "/proc/1/cmdline",
         os.path.join(checkout, "pyproject.toml")]
for path in tries:
    try:
        with open(path, "rb") as handle:
            print(f"READ {path}: {handle.read(4096)!r}")
    except OSError as exc:
        print(f"denied {path}: {exc.strerror}")
for directory in (os.path.dirname(secret_path), checkout, "/proc/1/root"):
    try:
        print(f"LISTED {directory}: {os.listdir(directory)}")
    except OSError as exc:
        print(f"denied {directory}: {exc.strerror}")
found = []
for root, dirs, files in os.walk("/input"):
    found += [os.path.join(root, f) for f in files if "outcome" in f or "success" in f]
print(f"outcome-like files in /input: {found}")
for pid in os.listdir("/proc"):
    if pid.isdigit():
        print(f"visible process {pid}")
