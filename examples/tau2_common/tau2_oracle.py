"""The oracle checks every tau2-bench domain port shares, against tau2's own Python code.

A domain's ``check.py`` names its domain, its builder and tau2's database model for it
(:class:`Port`) and calls :func:`main`:

1. Builds the repository (the domain's build.py) into --repo (default: a temporary
   folder), with ``[run.user_simulator]`` pointed at a local OpenAI-compatible server
   started here that ends every conversation after the scripted opening turn (it answers
   ``###STOP###``): the oracles need no model, and tau2's own oracle runs do not ask the
   user either.
2. **Replay**: ``evalcase run tau2_D --agent tau2_replay``: every case must pass.
3. **Final states**: for each task, tau2's environment (``get_environment()`` from the
   unzipped wheel) replays the same expected actions (``make_tool_call``, an error goes on
   like tau2's gold replay; the actions it rejects must be exactly the ones the case
   declares it left out of ``expected_calls``, ``metadata.x-tau2_gold_errors``) and its
   database must equal the state evalcase ended with:
   once validated by tau2's own database model (``FlightDB``, ``RetailDB``) and hashed with
   tau2's ``get_hash()``, and once as plain JSON (tau2's ``model_dump(exclude_none=True)``).
4. **Null agent**: ``evalcase run ... --agent tau2_null``; tau2's evaluator is given the same
   conversation (the opening user turn, the null answer) and computes its reward from the
   task's reward_basis (DB x COMMUNICATE by default: ``EnvironmentEvaluator`` and
   ``CommunicateEvaluator``, combined as ``evaluate_simulation`` does). evalcase's verdict
   must be ``pass`` exactly where tau2's reward is 1.

``--cover`` checks a covering subset instead of every task: for every tool tau2's expected
actions call, a task that calls it; tasks with and without communicate_info; tasks with and
without a state change; a task with no expected action; taken greedily in task order, so
the same tasks every time.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMMON = Path(__file__).resolve().parent
sys.path.insert(0, str(COMMON))

from stop_user import stop_user  # noqa: E402  (the oracle user, shared with the benchmark)

KEY_ENV = "TAU2_ORACLE_USER_KEY"


@dataclass(frozen=True)
class Port:
    """One domain's port, as the checks see it."""

    name: str  # tau2's domain name: "airline", "retail"
    build: Path  # the domain's build.py
    db_model: str  # tau2's database model in tau2.domains.<name>.data_model

    @property
    def dataset(self) -> str:
        return f"tau2_{self.name}"

    def case_id(self, tid: str) -> str:
        return f"{self.name}_agent_tau2_{int(tid):03d}"

    def module(self, part: str) -> Any:
        """tau2's ``tau2.domains.<name>.<part>`` (the unzipped wheel must be on sys.path)."""
        return importlib.import_module(f"tau2.domains.{self.name}.{part}")


def evalcase_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("evalcase")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "evalcase"]


def run(
    repo: Path, dataset: str, agent: str, select: list[str] | None
) -> tuple[Path, dict[str, Any]]:
    """One run of the dataset; its run folder and the case verdicts of its report."""
    outputs = repo / "outputs"
    before = set(outputs.glob("*/*")) if outputs.exists() else set()
    cmd = [*evalcase_cmd(), "run", dataset, "--agent", agent, "--progress", "none"]
    for pattern in select or []:
        cmd += ["--select", pattern]
    # The repository's handlers module on the path, before what the caller's path holds
    # (a test suite's own evalcase).
    path = os.pathsep.join([str(repo), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, KEY_ENV: "unused"}
    done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    new = sorted(set(outputs.glob("*/*")) - before)
    if not new:
        raise SystemExit(
            f"evalcase run wrote no run (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    folder = new[-1]
    verdicts: dict[str, Any] = {}
    for report in (repo / "reports").glob(f"*/{folder.name}/report.json"):
        for row in json.loads(report.read_text()).get("cases", []):
            verdicts[row["case_id"]] = row.get("status")
    return folder, verdicts


def attempts(folder: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (folder / "attempts.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            out[record["case_id"]] = record
    return out


def initial_state(repo: Path, name: str) -> dict[str, Any]:
    """The cases' initial state: the database fixture build.py wrote (one JSON object),
    since records (version 3) carry only its digest."""
    fixture = json.loads((repo / f"fixtures/state/tau2_{name}_db.yaml").read_text())
    state: dict[str, Any] = fixture["data"]
    return state


def declared_gold_errors(repo: Path, dataset: str, case_id: str) -> list[dict[str, Any]]:
    """The expected actions the case says it left out, tau2's own tools rejecting them
    (``metadata.x-tau2_gold_errors``, written by the builder)."""
    import yaml

    path = repo / "datasets" / dataset / "cases" / f"{case_id}.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    doc = yaml.load(path.read_text(), Loader=loader)  # a safe loader, in C when built
    rows: list[dict[str, Any]] = (doc.get("metadata") or {}).get("x-tau2_gold_errors") or []
    return rows


def task_of(case_id: str) -> str:
    return str(int(case_id.rsplit("_", 1)[1]))


def features(task: Any, writes: frozenset[str], rejected: bool = False) -> frozenset[str]:
    """What a task exercises, for --cover: the tools its expected actions call, whether it
    has communicate_info, whether it changes the database (calls one of ``writes``),
    whether it expects no action, whether tau2's own tools reject one of its expected
    actions (``rejected``: the case declares it)."""
    criteria = task.evaluation_criteria
    tools = {action.name for action in criteria.actions or []}
    out = {f"tool:{name}" for name in tools}
    out.add(f"communicate:{bool(criteria.communicate_info)}")
    out.add(f"writes:{bool(tools & writes)}")
    out.add(f"no_action:{not tools}")
    out.add(f"gold_error:{rejected}")
    return frozenset(out)


def rejected_tasks(repo: Path, port: Port) -> frozenset[str]:
    """The tasks whose case declares expected actions tau2's tools reject."""
    cases = sorted((repo / "datasets" / port.dataset / "cases").glob("*.yaml"))
    return frozenset(
        task_of(path.stem) for path in cases if declared_gold_errors(repo, port.dataset, path.stem)
    )


def cover(port: Port, tasks: list[Any], rejected: frozenset[str] = frozenset()) -> list[str]:
    """Task ids covering every feature of :func:`features` (greedy: the task adding the
    most features not yet covered, the first such in task order)."""
    from tau2.environment.toolkit import ToolType  # type: ignore[import-not-found]

    toolkit = port.module("environment").get_environment().tools
    writes = frozenset(
        name for name in toolkit.get_tools() if toolkit.tool_type(name) == ToolType.WRITE
    )
    of = {str(t.id): features(t, writes, str(t.id) in rejected) for t in tasks}
    wanted = frozenset().union(*of.values())
    chosen: list[str] = []
    covered: frozenset[str] = frozenset()
    while covered != wanted:
        best = max(of, key=lambda tid: len(of[tid] - covered))
        chosen.append(best)
        covered |= of[best]
    return sorted(chosen, key=int)


def environments(port: Port) -> Any:
    """``get_environment`` with tau2's database file read once: each call validates a
    fresh database (tau2's ``FlightDB``, ``RetailDB``) from the one parsed document, as
    tau2's own ``get_environment()`` does from the file, and gives it tau2's environment.
    Every container of those models is typed (no ``Any`` field), so pydantic builds each
    database's own dicts and lists and no two environments share a mutable value. The
    checks ask for a fresh environment three times per task; reading and parsing the 3 MB
    file each time was half of each one's cost."""
    environment = port.module("environment")
    db_model = getattr(port.module("data_model"), port.db_model)
    path = getattr(port.module("utils"), f"{port.name.upper()}_DB_PATH")
    document = importlib.import_module("tau2.utils").load_file(path)  # as tau2's DB.load

    def get_environment(solo_mode: bool = False) -> Any:
        return environment.get_environment(
            db=db_model.model_validate(document), solo_mode=solo_mode
        )

    return get_environment


def tau2_tasks(port: Port) -> list[Any]:
    """tau2's tasks of the domain (the unzipped wheel must be on sys.path)."""
    return list(port.module("environment").get_tasks(None))


def check(
    port: Port, repo: Path, select: list[str] | None, tau2: list[Any] | None = None
) -> dict[str, Any]:
    from tau2.data_model.message import AssistantMessage, UserMessage  # type: ignore[import-not-found]
    from tau2.data_model.tasks import RewardType, Task  # type: ignore[import-not-found]
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator  # type: ignore[import-not-found]
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator  # type: ignore[import-not-found]

    from evalcase.contract.records import final_state

    try:
        from loguru import logger  # tau2 logs every tool call at INFO

        logger.remove()
    except ImportError:
        pass
    get_environment = environments(port)
    db_model = getattr(port.module("data_model"), port.db_model)
    tasks: dict[str, Any] = {t.id: t for t in (tau2 if tau2 is not None else tau2_tasks(port))}
    oracle = json.loads((repo / "oracle/expected_actions.json").read_text())
    opener = {entry["task"]: first for first, entry in oracle.items()}
    out: dict[str, Any] = {"replay": {}, "final_state": {}, "null": {}, "gold_errors": {}}
    initial = initial_state(repo, port.name)

    folder, verdicts = run(repo, port.dataset, "tau2_replay", select)
    records = attempts(folder)
    out["replay_run"] = str(folder)
    for case_id, record in sorted(records.items()):
        tid = task_of(case_id)
        out["replay"][tid] = verdicts.get(case_id)
        env = get_environment()
        raised = []
        for action in tasks[tid].evaluation_criteria.actions or []:
            # tau2's gold replay goes on after an error too
            try:
                env.make_tool_call(
                    tool_name=action.name, requestor=action.requestor, **action.arguments
                )
            except Exception as exc:  # tau2's tools raise ValueError
                raised.append(
                    {"action_id": action.action_id, "tool": action.name, "tau2_error": str(exc)}
                )
        # The actions tau2 rejects are the ones the case declares it left out.
        out["gold_errors"][tid] = {
            "agree": raised == declared_gold_errors(repo, port.dataset, case_id),
            "tau2": raised,
        }
        ours = final_state(record, initial)
        if ours is None:
            out["final_state"][tid] = {"equal": False, "why": "no final state in the record"}
            continue
        theirs = env.tools.db
        hashed = db_model.model_validate(ours).get_hash() == theirs.get_hash()
        plain = json.loads(json.dumps(ours)) == theirs.model_dump(mode="json", exclude_none=True)
        out["final_state"][tid] = {"equal": hashed and plain, "hash": hashed, "plain": plain}

    folder, verdicts = run(repo, port.dataset, "tau2_null", select)
    out["null_run"] = str(folder)
    for case_id, record in sorted(attempts(folder).items()):
        tid = task_of(case_id)
        task: Task = tasks[tid]
        answers = [
            e.get("content") for e in record.get("trace", []) if e.get("type") == "assistant"
        ]
        trajectory = [UserMessage(role="user", content=opener[tid])]
        trajectory += [AssistantMessage(role="assistant", content=a or "") for a in answers]
        basis = set(task.evaluation_criteria.reward_basis)
        reward = 1.0
        if basis & {RewardType.DB, RewardType.ENV_ASSERTION}:
            reward *= EnvironmentEvaluator.calculate_reward(
                environment_constructor=get_environment, task=task, full_trajectory=trajectory
            ).reward
        if RewardType.COMMUNICATE in basis:
            reward *= CommunicateEvaluator.calculate_reward(
                task=task, full_trajectory=trajectory
            ).reward
        ours_v = verdicts.get(case_id)
        out["null"][tid] = {
            "evalcase": ours_v,
            "tau2_reward": reward,
            "agree": (ours_v == "pass") == (reward == 1.0),
        }

    n = len(out["replay"])
    summary = {
        "tasks": n,
        "replay_pass": sum(1 for v in out["replay"].values() if v == "pass"),
        "final_state_equal": sum(1 for v in out["final_state"].values() if v["equal"]),
        "null_agree": sum(1 for v in out["null"].values() if v["agree"]),
        "null_pass": sum(1 for v in out["null"].values() if v["evalcase"] == "pass"),
        "tau2_null_reward_1": sum(1 for v in out["null"].values() if v["tau2_reward"] == 1.0),
        "gold_errors_agree": sum(1 for v in out["gold_errors"].values() if v["agree"]),
        "gold_errors": sum(len(v["tau2"]) for v in out["gold_errors"].values()),
    }
    summary["ok"] = (
        n > 0
        and summary["replay_pass"]
        == summary["final_state_equal"]
        == summary["null_agree"]
        == summary["gold_errors_agree"]
        == n
    )
    out["summary"] = summary
    for tid, v in out["final_state"].items():
        if not v["equal"] or out["replay"][tid] != "pass":
            print(f"task {tid}: replay {out['replay'][tid]}, final state {v}")
    for tid, v in out["null"].items():
        if not v["agree"]:
            print(f"task {tid}: null agent {v}")
    for tid, v in out["gold_errors"].items():
        if not v["agree"]:
            print(f"task {tid}: tau2 rejects {v['tau2']}, the case declares otherwise")
    return out


def main(port: Port, description: str) -> int:
    """The checks' command line (``check.py [--cache DIR] [--repo DIR] [--select GLOB |
    --cover] [--json FILE]``); exit 0 when every check holds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/evalcase/tau2")
    parser.add_argument(
        "--repo", type=Path, help="build into this folder (default: a temporary one)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--select", help="only these cases (an evalcase --select value)")
    group.add_argument(
        "--cover", action="store_true", help="only a covering subset of the tasks (see above)"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tau2_") as tmp, stop_user() as url:
        repo = (ns.repo or Path(tmp) / "repo").resolve()
        built = subprocess.run(
            [
                sys.executable,
                str(port.build),
                str(repo),
                "--cache",
                str(ns.cache),
                "--user-simulator",
                f"{url},stop-user,{KEY_ENV}",
                "--no-lint",
            ],
            capture_output=True,
            text=True,
        )
        print(built.stdout.strip())
        if built.returncode != 0:
            print(built.stderr[-4000:])
            print("FAIL build")
            return 1
        linted = subprocess.run([*evalcase_cmd(), "lint"], cwd=repo, capture_output=True, text=True)
        print(f"lint: exit {linted.returncode}: {linted.stdout.strip().splitlines()[-1:]}")
        sys.path.insert(0, str(ns.cache / "unzipped"))
        select = [ns.select] if ns.select else None
        tau2 = tau2_tasks(port)
        if ns.cover:
            chosen = cover(port, tau2, rejected_tasks(repo, port))
            select = [port.case_id(tid) for tid in chosen]
            print(f"cover: tasks {', '.join(str(int(s.rsplit('_', 1)[1])) for s in select)}")
        results = check(port, repo, select, tau2)
        if ns.cover:
            results["summary"]["cover"] = [int(c.rsplit("_", 1)[1]) for c in select or []]
        results["summary"]["lint_clean"] = linted.returncode == 0
        results["summary"]["ok"] = results["summary"]["ok"] and linted.returncode == 0
    print(json.dumps(results["summary"], indent=1))
    if ns.json:
        ns.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if results["summary"]["ok"] else 1
