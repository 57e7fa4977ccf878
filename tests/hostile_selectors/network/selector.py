"""Tries to open network connections: to a host port the test listens on, and to the internet."""
import os
import socket

targets = [("127.0.0.1", int(os.environ["HOSTILE_PORT"])), ("1.1.1.1", 53), ("8.8.8.8", 443)]
connected = 0
for host, port in targets:
    try:
        with socket.create_connection((host, port), timeout=1):
            connected += 1
            print(f"CONNECTED {host}:{port}")
    except OSError as exc:
        print(f"blocked {host}:{port}: {exc}")
raise SystemExit(0 if connected else 3)
