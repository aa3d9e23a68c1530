"""The coverage matrix of a dataset (docs/authoring.md): approved cases per cell.

The manifest declares the dimensions (equivalence classes that change the system's
decision) and may mark cells required::

    coverage:
      dimensions:
        plan_structure: [regular, ai_generated, single_exercise, special]
        operation: [adjust_param, add, delete, replace, time_compress, safety_avoid]
      required:
        - {plan_structure: special, operation: safety_avoid}
        - {operation: delete}            # any plan structure

Each case names its cell in ``metadata.coverage``. A cell counts approved cases that
are not observation cases (those count in pass rates); observation cases and drafts are
shown apart, never counted. A required cell without a counted case is a gap (lint rule
EC452 reports it). With two dimensions the matrix is a table; with one, a row; with
more, one row per combination.
"""

from __future__ import annotations

import html
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from evalcase.config import Config
from evalcase.loader import load
from evalcase.model import FatalError

Cell = tuple[tuple[str, str], ...]


@dataclass
class CellCount:
    approved: list[str] = field(default_factory=list)
    observation: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # drafts, in review, rejected...
    required: bool = False

    @property
    def gap(self) -> bool:
        return self.required and not self.approved


@dataclass
class Coverage:
    dataset_id: str
    dimensions: dict[str, list[str]]
    required: list[Cell]
    cells: dict[Cell, CellCount]
    unplaced: list[str]
    # required cells whose partial description matched nothing counted
    gaps: list[Cell]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset_id": self.dataset_id,
            "dimensions": self.dimensions,
            "cells": [
                {
                    "cell": dict(cell),
                    "approved": c.approved,
                    "observation": c.observation,
                    "other": c.other,
                    "required": c.required,
                }
                for cell, c in self.cells.items()
            ],
            "required": [dict(cell) for cell in self.required],
            "gaps": [dict(cell) for cell in self.gaps],
            "unplaced": self.unplaced,
        }


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def counted(data: dict[str, Any]) -> bool | None:
    """True for an approved, counted case; None for an observation case; else False."""
    meta = _mapping(data.get("metadata"))
    role = meta.get("dataset_role")
    roles = role if isinstance(role, list) else [role]
    if "observation" in roles:
        return None
    return meta.get("review_status") == "approved"


def _values(meta: dict[str, Any], dimension: str) -> list[str]:
    cells = _mapping(meta.get("coverage"))
    value = cells.get(dimension)
    return [str(v) for v in (value if isinstance(value, list) else [value]) if v is not None]


def matches(cell: Cell, partial: Cell) -> bool:
    wanted = dict(partial)
    return all(dict(cell).get(k) == v for k, v in wanted.items())


def compute(config: Config, dataset_id: str) -> Coverage:
    folder = config.root / "datasets" / dataset_id
    manifest_path = folder / "dataset.yaml"
    if not manifest_path.is_file():
        raise FatalError(f"no dataset '{dataset_id}' (datasets/{dataset_id}/dataset.yaml)")
    manifest = load("dataset.yaml", manifest_path.read_bytes()).data
    coverage = _mapping(_mapping(manifest).get("coverage"))
    dims = coverage.get("dimensions")
    if not isinstance(dims, dict) or not dims:
        raise FatalError(
            f"datasets/{dataset_id}/dataset.yaml declares no coverage dimensions; add "
            "coverage: {dimensions: {<name>: [<class>, ...]}} (see docs/authoring.md)"
        )
    dimensions = {str(k): [str(x) for x in v] for k, v in dims.items() if isinstance(v, list)}
    required = [
        tuple(sorted((str(k), str(v)) for k, v in cell.items()))
        for cell in (coverage.get("required") or [])
        if isinstance(cell, dict) and cell
    ]
    names = list(dimensions)
    cells: dict[Cell, CellCount] = {
        tuple(zip(names, combo, strict=True)): CellCount()
        for combo in itertools.product(*(dimensions[n] for n in names))
    }
    for cell, count in cells.items():
        count.required = any(matches(cell, r) for r in required)
    unplaced: list[str] = []
    for path in sorted((folder / "cases").glob("*.yaml")):
        data = load(path.name, path.read_bytes()).data
        if not isinstance(data, dict):
            continue
        case_id = str(data.get("case_id", path.stem))
        meta = _mapping(data.get("metadata"))
        per_dim = [_values(meta, n) for n in names]
        if not all(per_dim):
            unplaced.append(case_id)
            continue
        status = counted(data)
        for combo in itertools.product(*per_dim):
            cell = tuple(zip(names, combo, strict=True))
            found = cells.get(cell)
            if found is None:
                unplaced.append(case_id)  # a class the manifest does not declare (EC312)
                continue
            bucket = (
                found.observation if status is None else found.approved if status else found.other
            )
            bucket.append(case_id)
    gaps = [
        r for r in required if not any(c.approved for cell, c in cells.items() if matches(cell, r))
    ]
    return Coverage(dataset_id, dimensions, required, cells, sorted(set(unplaced)), gaps)


# --- rendering ------------------------------------------------------------------------
def _label(count: CellCount) -> str:
    text = str(len(count.approved))
    extra = []
    if count.observation:
        extra.append(f"+{len(count.observation)} obs")
    if count.other:
        extra.append(f"+{len(count.other)} draft")
    if extra:
        text += f" ({', '.join(extra)})"
    if count.required:
        text += " !" if count.gap else " *"
    return text


def _grid(cov: Coverage) -> tuple[list[str], list[list[str]]]:
    """Header and rows: a table for two dimensions, one row per cell otherwise."""
    names = list(cov.dimensions)
    if len(names) == 2:
        rows_dim, cols_dim = names
        header = [f"{rows_dim} \\ {cols_dim}", *cov.dimensions[cols_dim]]
        rows = [
            [r]
            + [_label(cov.cells[((rows_dim, r), (cols_dim, c))]) for c in cov.dimensions[cols_dim]]
            for r in cov.dimensions[rows_dim]
        ]
        return header, rows
    header = [*names, "approved"]
    return header, [[v for _, v in cell] + [_label(c)] for cell, c in cov.cells.items()]


def _footer(cov: Coverage) -> list[str]:
    lines = [
        "cells: approved counted cases; (+n obs) observation cases, (+n draft) cases not yet "
        "approved, both not counted; * required, ! required and empty",
    ]
    for gap in cov.gaps:
        lines.append(
            "gap: required cell " + ", ".join(f"{k}={v}" for k, v in gap) + " has no approved case"
        )
    if cov.unplaced:
        lines.append(f"not in the matrix ({len(cov.unplaced)}): {', '.join(cov.unplaced)}")
    return lines


def render_text(cov: Coverage) -> str:
    header, rows = _grid(cov)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    out = [f"coverage of {cov.dataset_id}"]
    for row in [header, *rows]:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(out + _footer(cov)) + "\n"


def render_markdown(cov: Coverage) -> str:
    header, rows = _grid(cov)
    out = [f"### Coverage of `{cov.dataset_id}`", "", "| " + " | ".join(header) + " |"]
    out.append("|" + "---|" * len(header))
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([*out, "", *(f"- {line}" for line in _footer(cov))]) + "\n"


def render_json(cov: Coverage) -> str:
    return json.dumps(cov.to_dict(), ensure_ascii=False, indent=2) + "\n"


def render_html(cov: Coverage) -> str:
    header, rows = _grid(cov)
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = ""
    for row in rows:
        cells = f"<th>{e(row[0])}</th>" + "".join(
            f'<td class="{"gap" if c.endswith("!") else "req" if c.endswith("*") else ""}">'
            f"{e(c)}</td>"
            for c in row[1:]
        )
        body += f"<tr>{cells}</tr>"
    notes = "".join(f"<li>{e(line)}</li>" for line in _footer(cov))
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>Coverage of {e(cov.dataset_id)}</title><style>"
        "table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px 8px}"
        "td.gap{background:#fdd}td.req{background:#dfd}</style></head><body>"
        f"<h1>Coverage of {e(cov.dataset_id)}</h1><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table><ul>{notes}</ul></body></html>\n"
    )


RENDERERS = {"text": render_text, "md": render_markdown, "json": render_json, "html": render_html}
