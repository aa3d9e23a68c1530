"""Hangs (stops reading) while FLAG exists; otherwise a well-behaved echo agent.

One file (no _reply import): `evalcase run` starts it in the sandbox, which shows the
program file and FLAG (files named in its command line), not their folders."""

import json
import sys
import time
from pathlib import Path

for line in sys.stdin:
    request = json.loads(line)
    if Path(sys.argv[1]).exists():
        time.sleep(1000)
    content = "echo: " + str(request["messages"][-1]["content"])
    print(json.dumps({"role": "assistant", "content": content}), flush=True)
