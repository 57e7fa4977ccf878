"""Leaves a daemon behind, ignores SIGTERM and loops forever."""
import os
import signal
import time

if os.fork() == 0:
    os.setsid()
    while True:
        time.sleep(1)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("looping", flush=True)
while True:
    pass
