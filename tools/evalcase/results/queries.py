"""Questions across runs, asked of the results store (:mod:`evalcase.results.store`).

``history(store, CASE)``
    Every graded attempt of one case over time: per run and grading, the commit, the case
    version and content digest, the agent (and version), the prompt, and the verdicts
    (passes of attempts). A row whose case content differs from the row before it is
    marked ``case_changed``: what follows judges another case, so a drop there is never a
    regression. Every grading is listed (``newest`` marks each run's default).

``flaky(store)``
    Cases whose verdict changes at the same case content digest, agent (name and
    version), prompt, agent configuration (:func:`evalcase.results.store.agent_config`)
    and graders' configuration (a grading's ``config_digest``): under those, the only
    thing that differs between two attempts is chance. Each group's pass rate comes with
    a Wilson interval (``confidence``, 95% by default). Only decided verdicts count (pass
    and fail; pending and error say nothing about the agent's luck), and only each run's
    newest grading.

``trend(store, DATASET, by="commit"|"agent")``
    Per commit (in the order they were first run) or per agent: runs, attempts, pass@1,
    pass^k (the means of the runs' newest gradings), cost, latency (p50, the mean of the
    runs'), and with ``slice_key`` the pass@1 of each slice value (risk_level,
    case_type, tool, prompt, ... as in a report's slices).

``runs(store, dataset=, agent=, commit=, limit=, offset=)``
    Runs newest first with their newest grading's pass@1, pass^k and cost, a page at a
    time: the listing a viewer or a remote index shows.

Each returns frozen rows with a ``to_dict`` for ``--format json``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.results.noise import wilson
from evalcase.results.store import Store


@dataclass(frozen=True)
class HistoryRow:
    started_at: str
    run_id: str
    commit: str
    dataset_id: str
    agent: str
    agent_version: str
    prompt: str
    case_version: str
    digest: str
    grading_id: str
    newest: bool
    verdicts: tuple[str, ...]
    case_changed: bool

    @property
    def passes(self) -> int:
        return sum(1 for v in self.verdicts if v == "pass")

    def to_dict(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at,
            "run_id": self.run_id,
            "commit": self.commit,
            "dataset_id": self.dataset_id,
            "agent": self.agent,
            "agent_version": self.agent_version,
            "prompt": self.prompt or None,
            "case_version": self.case_version,
            "digest": self.digest,
            "grading_id": self.grading_id,
            "newest": self.newest,
            "verdicts": list(self.verdicts),
            "passes": self.passes,
            "attempts": len(self.verdicts),
            "case_changed": self.case_changed,
        }


def history(
    store: Store, case_id: str, *, dataset: str | None = None, newest_only: bool = False
) -> list[HistoryRow]:
    rows = store.con.execute(
        """
        SELECT r.started_at, v.run_id, r.commit, r.dataset_id, r.agent, r.agent_version,
               v.prompt, v.case_version, v.digest, v.grading_id, g.newest, v.verdicts,
               g.graded_at
        FROM case_verdicts v
        JOIN gradings g USING (run_id, grading_id)
        LEFT JOIN runs r USING (run_id)
        WHERE v.case_id = ? AND (? IS NULL OR r.dataset_id = ?) AND (g.newest OR NOT ?)
        ORDER BY r.started_at, v.run_id, v.prompt, g.graded_at, v.grading_id
        """,
        [case_id, dataset, dataset, newest_only],
    ).fetchall()
    out: list[HistoryRow] = []
    before: str | None = None
    for row in rows:
        digest = str(row[8] or "")
        version = str(row[7] or "")
        content = digest or version
        changed = before is not None and content != before
        before = content
        out.append(
            HistoryRow(
                str(row[0] or ""), str(row[1]), str(row[2] or ""), str(row[3] or ""),
                str(row[4] or ""), str(row[5] or ""), str(row[6]), version, digest,
                str(row[9]), bool(row[10]), tuple(str(v) for v in row[11]), changed,
            )
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class FlakyCase:
    case_id: str
    digest: str
    case_version: str
    agent: str
    agent_version: str
    prompt: str
    agent_config: str
    grading_config: str
    passes: int
    attempts: int
    runs: int  # runs with decided attempts in the group
    last_run: str  # the newest of them (run IDs sort by time)
    interval: tuple[float, float]

    @property
    def pass_rate(self) -> float:
        return self.passes / self.attempts if self.attempts else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "digest": self.digest,
            "case_version": self.case_version,
            "agent": self.agent,
            "agent_version": self.agent_version,
            "prompt": self.prompt or None,
            "agent_config": self.agent_config,
            "grading_config": self.grading_config,
            "passes": self.passes,
            "attempts": self.attempts,
            "pass_rate": round(self.pass_rate, 6),
            "interval": [round(self.interval[0], 6), round(self.interval[1], 6)],
            "runs": self.runs,
            "last_run": self.last_run,
        }


def flaky(store: Store, *, dataset: str | None = None, confidence: float = 0.95) -> list[FlakyCase]:
    # Two steps: the groups whose decided verdicts differ, from integers only (the key,
    # the counts, one row of the group), then that one row's descriptions.
    rows = store.con.execute(
        """
        WITH groups AS (
            SELECT flaky_key, sum(passes) AS passes, sum(passes + fails) AS n,
                   count(*) AS runs, max(run_id) AS last_run, min(rowid) AS one
            FROM case_verdicts
            WHERE newest AND (? IS NULL OR dataset_id = ?)
            GROUP BY flaky_key
            HAVING sum(passes) > 0 AND sum(fails) > 0
        )
        SELECT c.case_id, c.digest, c.case_version, c.agent, c.agent_version, c.prompt,
               c.agent_config, c.config_digest, g.passes, g.n, g.runs, g.last_run
        FROM groups g JOIN case_verdicts c ON c.rowid = g.one
        ORDER BY c.case_id, c.agent, c.agent_version, c.prompt
        """,
        [dataset, dataset],
    ).fetchall()
    return [
        FlakyCase(
            str(r[0]),
            str(r[1]),
            str(r[2] or ""),
            str(r[3] or ""),
            str(r[4] or ""),
            str(r[5]),
            str(r[6] or ""),
            str(r[7] or ""),
            int(r[8]),
            int(r[9]),
            int(r[10]),
            str(r[11]),
            wilson(int(r[8]), int(r[9]), confidence),
        )
        for r in rows
    ]


@dataclass(frozen=True)
class TrendRow:
    key: str  # the commit or the agent
    first_run: str
    runs: int
    attempts: int
    pass_at_1: float | None
    pass_hat_k: float | None
    cost: float | None
    latency_ms_p50: float | None
    slices: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "first_run": self.first_run,
            "runs": self.runs,
            "attempts": self.attempts,
            "pass@1": self.pass_at_1,
            "pass^k": self.pass_hat_k,
            "cost": self.cost,
            "latency_ms_p50": self.latency_ms_p50,
            "slices": dict(self.slices),
        }


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 6) if known else None


def trend(
    store: Store, dataset: str, *, by: str = "commit", slice_key: str | None = None
) -> list[TrendRow]:
    if by not in ("commit", "agent"):
        raise ValueError(f"trend by {by!r}: commit or agent")
    column = "r.commit" if by == "commit" else "r.agent"
    rows = store.con.execute(
        f"""
        SELECT {column}, r.started_at, r.run_id, g.attempts, g.pass_at_1, g.pass_hat_k,
               g.cost, g.latency_ms_p50, g.slices
        FROM runs r JOIN gradings g ON g.run_id = r.run_id AND g.newest
        WHERE r.dataset_id = ?
        ORDER BY r.started_at, r.run_id
        """,
        [dataset],
    ).fetchall()
    groups: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        groups[str(row[0])].append(row)
    out = []
    for key, members in groups.items():
        cut: dict[str, list[float | None]] = defaultdict(list)
        if slice_key:
            for m in members:
                slices = json.loads(m[8]) if isinstance(m[8], str) else (m[8] or {})
                for value, rates in ((slices or {}).get(slice_key) or {}).items():
                    cut[str(value)].append((rates or {}).get("pass@1"))
        costs = [m[6] for m in members if m[6] is not None]
        out.append(
            TrendRow(
                key,
                str(members[0][1] or ""),
                len(members),
                sum(int(m[3] or 0) for m in members),
                _mean([m[4] for m in members]),
                _mean([m[5] for m in members]),
                round(sum(costs), 6) if costs else None,
                _mean([m[7] for m in members]),
                {value: _mean(values) for value, values in sorted(cut.items())},
            )
        )
    return out


@dataclass(frozen=True)
class RunRow:
    """One run with its newest grading's figures (None when it was never graded)."""

    run_id: str
    commit: str
    dataset_id: str
    dataset_version: str
    agent: str
    agent_version: str
    started_at: str
    status: str
    attempts: int
    grading_id: str | None
    gradings: int
    pass_at_1: float | None
    pass_hat_k: float | None
    cost: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "commit": self.commit,
            "dataset_id": self.dataset_id,
            "dataset_version": self.dataset_version,
            "agent": self.agent,
            "agent_version": self.agent_version,
            "started_at": self.started_at,
            "status": self.status,
            "attempts": self.attempts,
            "grading_id": self.grading_id,
            "gradings": self.gradings,
            "pass@1": self.pass_at_1,
            "pass^k": self.pass_hat_k,
            "cost": self.cost,
        }


def runs(
    store: Store,
    *,
    dataset: str | None = None,
    agent: str | None = None,
    commit: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[RunRow]:
    """Runs, newest first, narrowed by dataset, agent and commit (a prefix), a page at a
    time (``limit``, ``offset``): what a listing of runs shows."""
    rows = store.con.execute(
        """
        SELECT r.run_id, r.commit, r.dataset_id, r.dataset_version, r.agent, r.agent_version,
               r.started_at, r.status,
               (SELECT count(*) FROM attempts a WHERE a.run_id = r.run_id),
               g.grading_id,
               (SELECT count(*) FROM gradings x WHERE x.run_id = r.run_id),
               g.pass_at_1, g.pass_hat_k, g.cost
        FROM runs r LEFT JOIN gradings g ON g.run_id = r.run_id AND g.newest
        WHERE (? IS NULL OR r.dataset_id = ?) AND (? IS NULL OR r.agent = ?)
              AND (? IS NULL OR starts_with(r.commit, ?))
        ORDER BY r.started_at DESC, r.run_id DESC
        LIMIT ? OFFSET ?
        """,
        [dataset, dataset, agent, agent, commit, commit, limit, offset],
    ).fetchall()
    return [
        RunRow(
            str(r[0]),
            str(r[1] or ""),
            str(r[2] or ""),
            str(r[3] or ""),
            str(r[4] or ""),
            str(r[5] or ""),
            str(r[6] or ""),
            str(r[7] or ""),
            int(r[8]),
            None if r[9] is None else str(r[9]),
            int(r[10]),
            r[11],
            r[12],
            r[13],
        )
        for r in rows
    ]
