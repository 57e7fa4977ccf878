"""Splits its memory over four processes: each touches 200 MiB, under its own
per-process address-space limit, and all hold it at once before exiting 0."""
import os
import time

HOLD = 200 << 20
ready_r, ready_w = os.pipe()
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        block = bytearray(HOLD)
        for offset in range(0, HOLD, 4096):
            block[offset] = 1
        os.write(ready_w, b"+")
        time.sleep(2)
        os._exit(0)
    children.append(pid)
os.close(ready_w)
block = bytearray(HOLD)
for offset in range(0, HOLD, 4096):
    block[offset] = 1
held = 1
while held < 4 and os.read(ready_r, 1):
    held += 1
print(f"{held} processes hold {HOLD >> 20} MiB each", flush=True)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
print(f"children ended with {codes}", flush=True)
raise SystemExit(0 if held == 4 and codes == [0, 0, 0] else 1)
