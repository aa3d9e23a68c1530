"""Writes MB megabytes to stderr before answering (a log flood)."""

import sys

from _reply import requests, say

chunk = b"x" * (1 << 20)
for _ in range(int(sys.argv[1])):
    sys.stderr.buffer.write(chunk)
sys.stderr.buffer.write(b"\nthe last line of the flood\n")
sys.stderr.flush()
for _request in requests():
    say("done")
