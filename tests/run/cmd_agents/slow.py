"""Takes a while per reply (the kill -9 test stops the runner during such a run)."""

import json
import sys
import time

for _line in sys.stdin:
    time.sleep(0.2)
    print(json.dumps({"role": "assistant", "content": "done"}), flush=True)
