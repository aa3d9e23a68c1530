"""Dies on its first request with a non-zero status."""

import sys

sys.stdin.readline()
sys.stderr.write("Traceback: something broke inside the agent\n")
sys.exit(3)
