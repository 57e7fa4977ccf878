"""Allocates without bound, touching every page."""
blocks = []
while True:
    blocks.append(bytearray(16 << 20))
