"""Prints megabytes without a newline."""

import sys

sys.stdin.readline()
sys.stdout.write("x" * (4 * 1024 * 1024))
sys.stdout.flush()
sys.stdin.readline()
