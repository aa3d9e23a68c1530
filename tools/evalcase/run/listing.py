"""The runs under an outputs folder, for ``evalcase runs``: each run's ``run.json`` with
its attempts and errors counted as ``--resume`` and ``evalcase grade`` count them (damaged
lines skipped, one record per attempt key), oldest first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalcase.contract import records
from evalcase.run import outputs


def list_runs(out_root: Path, dataset: str | None = None) -> list[dict[str, Any]]:
    """Each readable run's metadata plus ``counts`` (attempts, errors) and ``damaged``
    (lines of attempts.jsonl skipped); only ``dataset``'s runs when it is given."""
    rows = []
    for folder in outputs.all_runs(out_root):
        try:
            meta = folder.read_meta()
        except Exception:
            continue  # not a run folder (or one being created): nothing to list
        if dataset and meta["dataset"]["id"] != dataset:
            continue
        damaged: list[records.Damaged] = []
        found = records.dedup(list(folder.attempts(damaged)))
        meta["counts"] = {
            "attempts": len(found),
            "errors": sum(r.get("status") == "error" for r in found),
        }
        meta["damaged"] = len(damaged)
        rows.append(meta)
    rows.sort(key=lambda m: str(m.get("started_at")))
    return rows
