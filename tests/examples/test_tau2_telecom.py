"""The tau2-bench telecom port (examples/tau2_telecom/, docs/tau2-telecom.md), end to end.

Slow: the wheel is downloaded with pip (cached in EVALCASE_TAU2_CACHE, default
~/.cache/evalcase/tau2); one module fixture runs ``check.py --cover --drop-one``, which
builds a covering subset of the tasks twice (a replay repository, linted plain one),
replays them through real subprocess agents and a scripted replay user (the simulated
user a real HTTP server on 127.0.0.1 that answers ``###STOP###``) and compares the
results with tau2's own environment, sync included. Every test reads that one run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.helpers import invoke, module_from

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tau2_telecom"
CACHE = Path(os.environ.get("EVALCASE_TAU2_CACHE", Path.home() / ".cache/evalcase/tau2"))
# The checks' evalcase processes import this tree's evalcase, not the installed one.
TOOLS_ENV = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}

pytestmark = pytest.mark.slow


def _module(name: str) -> ModuleType:
    """examples/tau2_telecom/<name>.py under its own name (other ports have a check.py)."""
    sys.path.insert(0, str(EXAMPLE))
    return module_from(EXAMPLE / f"{name}.py", f"tau2_telecom_{name}")


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``check.py --cover --drop-one`` run: its results, output and repositories."""
    tmp = tmp_path_factory.mktemp("tau2_telecom")
    out = tmp / "check.json"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "check.py"), "--cache", str(CACHE),
         "--repo", str(tmp / "repo"), "--json", str(out), "--cover", "--drop-one"],
        capture_output=True, text=True, env=TOOLS_ENV,
    )  # fmt: skip
    assert out.is_file(), (done.stdout[-3000:], done.stderr[-3000:])
    return {"results": json.loads(out.read_text()), "proc": done, "repo": tmp / "repo"}


@pytest.fixture(scope="module")
def tau2(checked: dict[str, Any]) -> Any:
    """tau2's telecom code and tasks, loaded once for the tests that read them
    (``checked``: the check unzips the wheel)."""
    check = _module("check")
    return check.Tau2(check.unzip(check.wheel(CACHE, None), CACHE))


def test_check_passes_on_the_covering_subset(checked: dict[str, Any]) -> None:
    summary = checked["results"]["summary"]
    assert checked["proc"].returncode == 0, checked["proc"].stdout[-3000:]
    assert summary["ok"] is True


def test_the_generated_repository_lints_clean_and_has_both_actors_tools(
    checked: dict[str, Any],
) -> None:
    plain: Path = checked["repo"] / "plain"
    assert checked["results"]["summary"]["lint_clean"], checked["proc"].stdout[-3000:]
    assert len(list((plain / "fixtures/tool").glob("*.yaml"))) == 13 + 30
    no_handler = [
        p.name
        for p in (plain / "fixtures/tool").glob("*.yaml")
        if "handler" in yaml.safe_load(p.read_text())["data"]
    ]
    assert no_handler == []
    case = yaml.safe_load(next((plain / "datasets/tau2_telecom/cases").glob("*.yaml")).read_text())
    assert len(case["available_tools"]) == 13
    assert len(case["user_simulator"]["tools"]) == 30
    assert not set(case["available_tools"]) & set(case["user_simulator"]["tools"])
    assert (plain / "fixtures/cel/telecom.yaml").is_file()


def test_the_covering_subset_covers_every_tool_fault_family_and_reward_basis(
    checked: dict[str, Any], tau2: Any
) -> None:
    check = _module("check")
    selected = checked["results"]["selected"]
    wanted = set().union(*(check.features(t) for t in tau2.tasks))
    got = set().union(*(check.features(tau2.tasks[n]) for n in selected))
    assert got == wanted
    assert {"action_reward:True", "action_reward:False"} <= got
    # every one of the 43 tools is called at least once (the probe calls the ones the gold
    # does not), and every user tool answers tau2's own text
    assert checked["results"]["summary"]["tools_called"] == 43
    assert checked["results"]["summary"]["user_answers_differ"] == 0


def test_replay_passes_and_final_states_equal_tau2s_synced_replay(checked: dict[str, Any]) -> None:
    results = checked["results"]
    rows = list(results["replay"].values())
    assert rows and all(r["evalcase"] == "pass" and r["tau2_reward"] == 1.0 for r in rows)
    every = [r for part in ("replay", "drop_one", "probe") for r in results[part].values()]
    assert [r for r in every if not r["state_equal"]] == []


def test_the_null_conversation_fails_as_tau2_scores_it_zero(checked: dict[str, Any]) -> None:
    rows = list(checked["results"]["null"].values())
    assert rows and all(r["evalcase"] != "pass" and r["tau2_reward"] == 0.0 for r in rows)


def test_each_drop_one_variants_verdict_equals_tau2s_reward(
    checked: dict[str, Any], tau2: Any
) -> None:
    rows = checked["results"]["drop_one"]
    # one variant per gold action of each selected task
    gold = sum(
        len(tau2.tasks[n].evaluation_criteria.actions or []) for n in checked["results"]["selected"]
    )
    assert len(rows) == gold > 0
    assert [c for c, r in rows.items() if not r["agree"]] == []


# Both verdicts (docs/tau2-telecom.md, "Both verdicts"): task 50 of the covering subset
# (its gold has the user's calls and the agent's, a reboot the reward does not need, and
# writes of the agent's the gold never calls), audited as tau2 grades it and as the
# strict variant does.
BOTH_TASK = 50


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """``evalcase audit`` of one task, in a default build and a ``--strict`` one."""
    tmp = tmp_path_factory.mktemp("tau2_telecom_both")
    stop = module_from(ROOT / "examples/tau2_common/stop_user.py", "tau2_telecom_stop_user")
    out: dict[str, dict[str, Any]] = {}
    with stop.stop_user() as url:
        for name, flags in (("default", []), ("strict", ["--strict"])):
            repo = tmp / name
            subprocess.run(
                [sys.executable, str(EXAMPLE / "build.py"), str(repo), "--cache", str(CACHE),
                 "--no-lint", "--select", str(BOTH_TASK),
                 "--user-simulator", f"{url},stop-user,TAU2_ORACLE_USER_KEY", *flags],
                check=True, capture_output=True,
            )  # fmt: skip
            done = invoke(
                "audit", "tau2_telecom", "--progress", "none", "--format", "json",
                cwd=repo, env={"TAU2_ORACLE_USER_KEY": "unused"},
            )  # fmt: skip
            assert done.returncode in (0, 1), done.stderr[-3000:]
            [facts] = json.loads(done.stdout).values()
            out[name] = facts
    return out


def _outcomes(facts: dict[str, Any], kind: str) -> dict[str, str]:
    return {m["mutant"]: m["outcome"] for m in facts["mutants"] if m["kind"] == kind}


def test_tau2s_reward_lets_a_foreign_write_pass_the_strict_variant_fails_it(
    audited: dict[str, dict[str, Any]],
) -> None:
    """tau2-bench #459: the gold plus suspend_line on an uninvolved customer scores 1 with
    tau2's reward (no DB check): a collateral_damage finding of the default build. The
    strict build keeps every other customer, line and bill unchanged: every foreign write
    that went through fails it, and the gold still passes both."""
    default, strict = audited["default"], audited["strict"]
    assert default["outcomes"]["gold"] == strict["outcomes"]["gold"] == "passes"
    damage = [f["reason"] for f in default["findings"] if f["kind"] == "collateral_damage"]
    assert any(r.startswith("the gold plus suspend_line on customers/C1002") for r in damage)
    assert _outcomes(default, "foreign")["foreign-suspend_line"] == "passes"
    assert [f for f in strict["findings"] if f["kind"] == "collateral_damage"] == []
    tried = _outcomes(strict, "foreign")
    assert tried.keys() == _outcomes(default, "foreign").keys()
    assert {v for k, v in tried.items() if _outcomes(default, "foreign")[k] == "passes"} == {
        "fails"
    }


def test_the_drop_one_verdicts_are_the_same_in_both_builds(
    audited: dict[str, dict[str, Any]],
) -> None:
    """Dropping a gold call writes nothing outside the task: both builds agree, and the
    only dropped call that still passes is the user's reboot that check.py finds tau2's
    reward does not need either (docs/tau2-telecom.md)."""
    default, strict = audited["default"], audited["strict"]
    assert _outcomes(default, "drop") == _outcomes(strict, "drop")
    passing = [m for m in default["mutants"] if m["kind"] == "drop" and m["outcome"] == "passes"]
    assert [(m["tool"], m.get("actor")) for m in passing] == [("reboot_device", "user")]
