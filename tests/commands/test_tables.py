"""The text tables of history, flaky, trend and runs (42.9): a column is as wide as its
widest value, so rows whose agents, agent versions, prompts or case IDs share a long
prefix still read apart (`bank_agent openai:bank-v1` and `bank_agent_v2 openai:bank-v1`
were cut to `bank_agent openai:bank-v` and `bank_agent_v2 openai:ban`)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evalcase.commands.results import flaky_command, history_command, trend_command
from evalcase.commands.run import runs
from tests.results.folders import write_grading, write_run

CASE_1 = "bank_transfer_limit_exceeded_business_account_001"
CASE_2 = "bank_transfer_limit_exceeded_business_account_002"

# (run, agent, agent version, prompt): the names, which share long prefixes
RUNS = [
    ("r1", "bank_agent", "openai:bank-v1", "bank_intent_labels@v1"),
    ("r2", "bank_agent_v2", "openai:bank-v1", "bank_intent_labels_strict@v1"),
    ("r3", "bank_py_agent", "bank-llm-agent-v1", None),
    ("r4", "bank_py_agent", "bank-llm-agent-v2", None),
    ("r5", "bank_assistant_agent_retail_v1", "1", None),
    ("r6", "bank_assistant_agent_retail_v2", "1", None),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "evalcase.toml").write_text("[lint]\n", "utf-8")
    (tmp_path / "datasets").mkdir()
    verdicts = {CASE_1: "pf", CASE_2: "fp"}  # each group passes once and fails once: flaky
    for n, (run_id, agent, version, prompt) in enumerate(RUNS):
        when = f"2026-12-01T1{n}:00:00+00:00"
        write_run(tmp_path, run_id, verdicts, agent=agent, agent_version=version,
                  started_at=when, dataset="bank_support_set")  # fmt: skip
        write_grading(tmp_path, run_id, f"g{n}", verdicts, prompt=prompt)
    return tmp_path


def _out(command: click.Command, root: Path, *args: str) -> str:
    result = CliRunner().invoke(command, [*args, "--root", str(root)])
    assert result.exit_code in (0, 1), result.output
    return result.output


def test_history_and_flaky_keep_agents_versions_prompts_and_case_ids_apart(root: Path) -> None:
    history = _out(history_command, root, CASE_1)
    flaky = _out(flaky_command, root)
    for text in (history, flaky):
        for _, agent, version, prompt in RUNS:
            assert f"{agent} {version}" in text, text
            if prompt:
                assert prompt in text, text
    assert CASE_1 in flaky and CASE_2 in flaky, flaky


def test_trend_and_runs_keep_long_agent_names_apart(root: Path) -> None:
    by_agent = _out(trend_command, root, "bank_support_set", "--by", "agent")
    listing = _out(runs, root)
    for _, agent, version, _ in RUNS:
        assert f"\n{agent} " in by_agent, by_agent
        assert f"{agent} {version}" in listing, listing


def test_columns_line_up_in_terminal_columns_whatever_the_script() -> None:
    from evalcase.commands.common import table, text_width

    lines = table(("CASE", "AGENT", "N"), [("退款_001", "a", "1"), ("refund_long_002", "b", "12")],
                  right={2})  # fmt: skip
    assert text_width("退款_001") == 8
    # the second column starts at the same terminal column on every line
    agents = ["AGENT", "a", "b"]
    starts = {text_width(line[: line.index(a)]) for line, a in zip(lines, agents, strict=True)}
    assert len(starts) == 1, lines
    assert lines[1].endswith(" 1") and lines[2].endswith("12")
    assert all(line == line.rstrip() for line in lines)
