"""`evalcase import FILE --dataset DATASET`: production bad cases flow back (docs/authoring.md).

Reads the offline JSONL shape (``schemas/offline-case.schema.json``:
id, input, expected, rubric, tags, risk_level, source), or CSV with the same columns
(nested columns as JSON text; ``tags`` may also be ``a;b`` or ``a,b``; a plain
``expected`` is its outcome). Each line becomes a draft case with the next free ID:

- ``input`` and its context (``input.message``; ``context_refs``, ``context``, ``env``
  into ``context``) carried over as they are;
- ``source`` recorded (the line's own, else "production bad case <id> (<file>)"), and
  ``metadata.origin`` with the external ID, file and line, and what production said was
  expected (``expected``, ``rubric``) for the reviewer to read;
- role ``observation`` (not counted in pass rates) and ``review_status: draft`` until a
  person reviews it; ``usage_rights_status: pending_review``;
- ``risk_level`` mapped (critical P0, high P1, medium P2, low P3), tags kept;
- the expectation fields left as ``TODO:`` placeholders (EC451): what is correct is for
  a person to decide, not for the log (docs/authoring.md).

Nothing is written unless the whole file is good: an invalid line stops the import and
is named (line number and what is wrong: not JSON, nested deeper than 64 levels, a CSV
cell over 128 KiB, a draft over lint's ``max_file_bytes``), unless ``skip_invalid``;
personal data found by the same detectors as lint (evalcase.pii, masked in the report)
stops it too, unless ``allow_personal_data``. Duplicates of existing cases, or of
earlier lines, by normalized input and context, are skipped and listed.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.authoring.fmt import canonicalize
from evalcase.authoring.ids import case_path, check_stem, next_case_id, used_case_ids
from evalcase.config import Config
from evalcase.loader import load
from evalcase.model import FatalError, FileKind
from evalcase.yamlwrite import round_trip_dump

RISK = {"critical": "P0", "high": "P1", "medium": "P2", "low": "P3"}
COLUMNS = ("id", "input", "expected", "rubric", "tags", "risk_level", "source")
MAX_LINES = 100_000


@dataclass(frozen=True)
class Problem:
    line: int
    message: str


@dataclass(frozen=True)
class PersonalData:
    line: int
    field: str
    kind: str
    masked: str


@dataclass(frozen=True)
class Planned:
    line: int
    external_id: str
    case_id: str
    path: Path
    text: str


@dataclass
class ImportPlan:
    """What an import would do; ``blocked`` says why nothing may be written."""

    planned: list[Planned] = field(default_factory=list)
    duplicates: list[tuple[int, str, str]] = field(default_factory=list)  # line, id, of
    invalid: list[Problem] = field(default_factory=list)
    personal: list[PersonalData] = field(default_factory=list)
    skip_invalid: bool = False
    allow_personal_data: bool = False

    @property
    def blocked(self) -> str | None:
        if self.invalid and not self.skip_invalid:
            return "an invalid line"
        if self.personal and not self.allow_personal_data:
            return "personal data"
        return None


# --- reading --------------------------------------------------------------------------
def read_records(path: Path) -> list[tuple[int, Any, str | None]]:
    """(line number, record or None, why it cannot be read) for each line or row."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise FatalError(f"cannot read {path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise FatalError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if path.suffix.lower() == ".csv":
        return _read_csv(text)
    out: list[tuple[int, Any, str | None]] = []
    # Lines end at \n only: U+2028, U+2029 and U+0085 are legal inside JSON strings,
    # and str.splitlines() would cut a record there.
    for number, line in enumerate(text.split("\n"), 1):
        if number > MAX_LINES:
            raise FatalError(f"{path} has more than {MAX_LINES:,} lines; split it")
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            out.append((number, None, f"not JSON: {exc.msg} at column {exc.colno}"))
            continue
        except RecursionError:
            record = _TOO_DEEP
        if record is _TOO_DEEP or nesting_depth(record) > MAX_DEPTH:
            out.append((number, None, _DEEP))
            continue
        out.append((number, record, None))
    return out


MAX_DEPTH = 64  # lint's default max_depth: a deeper draft would be EC006
MAX_CELL = 128 * 1024  # bytes of one CSV cell (the csv module's own field limit)
_TOO_DEEP = object()
_DEEP = f"nested deeper than {MAX_DEPTH} levels (lint's max_depth); flatten the record"


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests (a scalar 0), without recursion; it stops at the first
    level past ``limit`` (so a hostile document costs no more than the limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if level > limit:
                return level
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


_EMPTY: dict[str, Any] = {"rubric": None, "expected": {}, "tags": []}


def _cell(column: str, value: str) -> Any:
    value = value.strip()
    if not value and column in _EMPTY:
        return _EMPTY[column]
    if value[:1] in ("{", "[") or (column == "rubric" and value == "null"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        except RecursionError:
            raise _BadRow(f"column {column}: {_DEEP}") from None
        if nesting_depth(parsed) > MAX_DEPTH:
            raise _BadRow(f"column {column}: {_DEEP}")
        return parsed
    if column == "tags":
        return [t.strip() for t in value.replace(";", ",").split(",") if t.strip()]
    if column == "expected":
        return {"outcome": value} if value else {}
    return value


def _read_csv(text: str) -> list[tuple[int, Any, str | None]]:
    csv.field_size_limit(MAX_CELL)  # the module's default, set in case another changed it
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS[:-1] if c not in (reader.fieldnames or [])]
    if missing:
        raise FatalError(
            f"the CSV header lacks {', '.join(missing)}; columns: {', '.join(COLUMNS)}"
        )
    out: list[tuple[int, Any, str | None]] = []
    start = 2
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # a cell over the field limit, a stray quote...
            reason = (
                f"a cell longer than {MAX_CELL:,} bytes (128 KiB); shorten it"
                if "field limit" in str(exc)
                else f"not CSV: {exc}"
            )
            out.append((start, None, reason))
            start = reader.line_num + 1
            continue
        if reader.line_num > MAX_LINES:
            raise FatalError(f"more than {MAX_LINES:,} lines; split the file")
        try:
            record = {
                k: _cell(k, v or "")
                for k, v in row.items()
                if k and ((v or "").strip() or k in _EMPTY)
            }
        except _BadRow as bad:
            out.append((start, None, str(bad)))
        else:
            out.append((start, record, None))
        start = reader.line_num + 1
    return out


def _oversized(size: int, limit: int) -> str:
    return (
        f"the draft case would hold {size:,} bytes, over lint's max_file_bytes "
        f"({limit:,}); shorten the record's input or context"
    )


class _BadRow(ValueError):
    """A CSV row that cannot become a record (the message says why)."""


def validate(record: Any) -> str | None:
    """Why ``record`` is not an offline JSONL case (schemas/offline-case.schema.json), or None."""
    from evalcase.schemas import validator_for

    if not isinstance(record, dict):
        return "not a JSON object"
    errors = sorted(validator_for("offline_case").iter_errors(record), key=lambda e: e.path)
    if not errors:
        return None
    first = errors[0]
    where = ".".join(str(p) for p in first.absolute_path) or "the line"
    return f"{where}: {first.message}"


# --- normalization --------------------------------------------------------------------
def normalize(value: Any) -> Any:
    """Text compared without width, case and spacing differences."""
    if isinstance(value, str):
        return " ".join(unicodedata.normalize("NFKC", value).casefold().split())
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


# References to fixtures are not content: an export lists the fixtures a case resolved
# (``context_refs``), the case names them (``fixtures``); the same case either way.
_REFERENCES = ("context_refs", "fixtures", "env")


def dedupe_key(case_input: Any, context: Any) -> str:
    """The case's own content: what the user says and the context it is given, without
    references to fixtures, normalised."""
    if isinstance(case_input, dict) and set(case_input) == {"message"}:
        case_input = case_input["message"]
    if not isinstance(case_input, str) and case_input is not None:
        case_input = json.dumps(case_input, ensure_ascii=False, sort_keys=True)
    own = {k: v for k, v in (context or {}).items() if k not in _REFERENCES}
    return json.dumps([normalize(case_input), normalize(own)], sort_keys=True, ensure_ascii=False)


def existing_keys(config: Config) -> dict[str, str]:
    """Dedupe key -> case ID for every case in the repository: from its file (``input``
    and ``context``) and from what its task sends (the first user turn the agent answers,
    as exports write it), read from the file without building the task."""
    from evalcase.contract.build import first_user_turn

    keys: dict[str, str] = {}
    cases: list[tuple[str, dict[str, Any]]] = []
    for path in sorted((config.root / "datasets").glob("*/cases/*.yaml")):
        data = load(path.name, path.read_bytes()).data
        if isinstance(data, dict):
            cases.append((path.stem, data))
            if "input" in data:
                keys.setdefault(dedupe_key(data.get("input"), data.get("context")), path.stem)
    for case_id, data in cases:
        keys.setdefault(dedupe_key(first_user_turn(data), data.get("context")), case_id)
    return keys


# What evalcase's jsonl export adds to ``input`` from the agent view: the system prompt and
# the prompt fixture rendered. A case holds them as its own fields (the system prompt in
# ``generation_config``, ``prompt:``), so they are no part of what the user said.
_RENDERED = ("system", "prompt", "messages")


def case_fields(record: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(input, context) of a case from an offline JSONL record."""
    raw = record["input"]
    if isinstance(raw, str):
        return raw, {}
    context: dict[str, Any] = {}
    if isinstance(raw.get("context"), dict):
        context.update(raw["context"])
    if raw.get("context_refs"):
        context["context_refs"] = list(raw["context_refs"])
    if isinstance(raw.get("env"), dict):
        context["env"] = raw["env"]
    rest = {k: v for k, v in raw.items() if k not in ("message", "context", "context_refs", "env")
            and k not in _RENDERED}  # fmt: skip
    message = raw.get("message")
    if isinstance(message, str) and message and not rest:
        return message, context
    return ({"message": message, **rest} if message else rest), context


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [s for i, v in enumerate(value) for s in _strings(v, f"{where}[{i}]")]
    return []


def personal_data(line: int, record: dict[str, Any]) -> list[PersonalData]:
    from evalcase.pii import find_personal_data

    found = []
    for where, text in _strings(record, "")[:10_000]:
        for match in find_personal_data(text):
            found.append(PersonalData(line, where.lstrip("."), match.kind, match.masked))
    return found


# --- planning and writing -------------------------------------------------------------
def default_stem(config: Config, dataset_id: str) -> str:
    """The dataset's most common ``<domain>_<ability>`` with ``bad_case``; the first
    vocabulary words when the dataset has no case yet."""
    counts: dict[str, int] = {}
    for path in (config.root / "datasets" / dataset_id / "cases").glob("*.yaml"):
        words = path.stem.split("_")
        known = len(words) > 2 and (not config.domains or words[0] in config.domains)
        if known and (not config.abilities or words[1] in config.abilities):
            prefix = "_".join(words[:2])
            counts[prefix] = counts.get(prefix, 0) + 1
    if counts:
        prefix = max(sorted(counts), key=lambda k: counts[k])
    elif config.domains and config.abilities:
        prefix = f"{config.domains[0]}_{config.abilities[0]}"
    else:
        raise FatalError(
            f"{dataset_id} has no case to take an ID stem from and no vocabulary is "
            "configured: give --scenario <domain>_<ability>_<words>"
        )
    return f"{prefix}_bad_case"


def plan_import(
    config: Config,
    file: Path,
    dataset_id: str,
    *,
    stem: str | None = None,
    case_types: tuple[str, ...] = (),
    skip_invalid: bool = False,
    allow_personal_data: bool = False,
) -> ImportPlan:
    from evalcase.authoring.new import build

    plan = ImportPlan(skip_invalid=skip_invalid, allow_personal_data=allow_personal_data)
    stem = check_stem(stem or default_stem(config, dataset_id), config)
    used = used_case_ids(config)
    seen = existing_keys(config)
    for line, record, error in read_records(file):
        problem = error or validate(record)
        if problem is not None:
            plan.invalid.append(Problem(line, problem))
            continue
        case_input, context = case_fields(record)
        carried = len(json.dumps([case_input, context], ensure_ascii=False).encode("utf-8"))
        if carried > config.max_file_bytes:  # the draft holds them: refused before the scans
            plan.invalid.append(Problem(line, _oversized(carried, config.max_file_bytes)))
            continue
        plan.personal.extend(personal_data(line, record))
        key = dedupe_key(case_input, context)
        if key in seen:
            plan.duplicates.append((line, str(record["id"]), seen[key]))
            continue
        case_id = next_case_id(stem, used)
        used.add(case_id)
        seen[key] = case_id
        data = build(config, dataset_id, case_id, case_types or None)
        data["input"] = case_input
        if context:
            data["context"] = context
        data["risk_level"] = RISK[record["risk_level"]]
        data["source"] = record.get("source") or (
            f"production bad case {record['id']} ({file.name})"
        )
        meta = data["metadata"]
        meta["dataset_role"] = "observation"
        meta["review_status"] = "draft"
        meta["usage_rights_status"] = "pending_review"
        meta["tags"] = list(record.get("tags") or [])
        meta["origin"] = {
            "external_id": str(record["id"]),
            "imported_from": f"{file.name}:{line}",
            "reported_expected": record.get("expected") or {},
            "reported_rubric": record.get("rubric"),
        }
        canonicalize(data, FileKind.CASE)
        text = round_trip_dump(data)
        size = len(text.encode("utf-8"))
        limit = config.max_file_bytes
        if size > limit:
            # A draft lint would not read (EC005): refused here, with the limit.
            plan.invalid.append(Problem(line, _oversized(size, limit)))
            used.discard(case_id)
            del seen[key]
            continue
        plan.planned.append(
            Planned(
                line, str(record["id"]), case_id, case_path(config.root, dataset_id, case_id), text
            )
        )
    return plan


def write(plan: ImportPlan) -> list[Planned]:
    """Write the planned cases; refuses when the plan is blocked."""
    if plan.blocked is not None:
        raise FatalError(f"nothing written: {plan.blocked}")
    for item in plan.planned:
        item.path.parent.mkdir(parents=True, exist_ok=True)
        with item.path.open("x", encoding="utf-8") as out:
            out.write(item.text)
    return plan.planned
