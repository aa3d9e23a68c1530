"""Reads the request and never answers."""

import sys
import time

sys.stdin.readline()
time.sleep(600)
