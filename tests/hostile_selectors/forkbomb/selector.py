"""Forks without bound: every child sleeps, the parent forks until it cannot."""
import os
import sys
import time

count = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        count += 1
finally:
    print(f"forked {count} children", flush=True)
    sys.stdout.flush()
