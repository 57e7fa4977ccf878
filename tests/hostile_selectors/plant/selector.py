"""Tries to plant files in the host's input and selector directories through the
sandbox's binds (made world-writable on the host by the test), and to remount them."""
import os

for directory in ("/input", "/input/library", "/selector"):
    path = os.path.join(directory, "planted.txt")
    try:
        with open(path, "w") as handle:
            handle.write("planted")
        print(f"PLANTED {path}")
    except OSError as exc:
        print(f"refused {path}: {exc.strerror}")
    try:
        os.mkdir(os.path.join(directory, "planted-dir"))
        print(f"PLANTED {directory}/planted-dir")
    except OSError as exc:
        print(f"refused {directory}/planted-dir: {exc.strerror}")
