"""Forks until it cannot, then holds every process it got until it is killed."""
import os
import time

count = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    count += 1
print(f"holding {count} children", flush=True)
time.sleep(600)
