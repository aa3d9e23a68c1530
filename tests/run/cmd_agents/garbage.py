"""Prints something that is not JSON."""

import sys

sys.stdin.readline()
print("Sure! Here is my answer: <html>", flush=True)
time_to_wait = sys.stdin.readline()
