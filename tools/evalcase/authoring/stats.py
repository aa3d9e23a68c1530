"""`evalcase stats`: how many cases there are, sliced the ways reports slice them.

Counts per dataset, case type, risk level, role (dataset_role views), review status,
owner and source. A case with several types or roles counts once under each; a case
without the field counts under "(none)". Read from the working tree.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.config import Config
from evalcase.loader import load

SLICES = ("dataset", "case_type", "risk_level", "role", "review_status", "owner", "source")
NONE = "(none)"


@dataclass
class Stats:
    total: int = 0
    unreadable: list[str] = field(default_factory=list)
    counts: dict[str, Counter[str]] = field(default_factory=lambda: {s: Counter() for s in SLICES})

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "unreadable": self.unreadable,
            **{
                s: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
                for s, c in self.counts.items()
            },
        }


def _list(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(v) for v in items if v not in (None, "")] or [NONE]


def collect(config: Config, datasets: tuple[str, ...] = ()) -> Stats:
    stats = Stats()
    for path in sorted((config.root / "datasets").glob("*/cases/*.yaml")):
        dataset = path.parent.parent.name
        if datasets and dataset not in datasets:
            continue
        rel = Path(path).relative_to(config.root).as_posix()
        data = load(rel, path.read_bytes()).data
        if not isinstance(data, dict):
            stats.unreadable.append(rel)
            continue
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        stats.total += 1
        values = {
            "dataset": [dataset],
            "case_type": _list(data.get("case_types")),
            "risk_level": _list(data.get("risk_level")),
            "role": _list(meta.get("dataset_role") if isinstance(meta, dict) else None),
            "review_status": _list(meta.get("review_status") if isinstance(meta, dict) else None),
            "owner": _list(meta.get("owner") if isinstance(meta, dict) else None),
            "source": _list(data.get("source")),
        }
        for name, items in values.items():
            stats.counts[name].update(dict.fromkeys(items, 1))
    return stats


def render_text(stats: Stats) -> str:
    out = [f"{stats.total} cases"]
    for name in SLICES:
        out.append(f"\nby {name.replace('_', ' ')}:")
        for value, n in sorted(stats.counts[name].items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(f"  {n:>5}  {value}")
    if stats.unreadable:
        out.append(f"\nunreadable (run evalcase lint): {', '.join(stats.unreadable)}")
    return "\n".join(out) + "\n"


def render_markdown(stats: Stats) -> str:
    out = [f"**{stats.total} cases**"]
    for name in SLICES:
        out += ["", f"| {name} | cases |", "|---|---|"]
        for value, n in sorted(stats.counts[name].items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(f"| {value.replace('|', '/')} | {n} |")
    return "\n".join(out) + "\n"


def render_json(stats: Stats) -> str:
    return json.dumps(stats.to_dict(), ensure_ascii=False, indent=2) + "\n"


RENDERERS = {"text": render_text, "md": render_markdown, "json": render_json}
