"""The judge's settings are read once into ``JudgeSettings`` (evalcase.grade.readers):
``[run.judge]``, which has no schema, can hold a value of the wrong kind; that is a clear
error naming the setting, never a traceback from deep in grading."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.model import FatalError
from evalcase.report.pipeline import context_from
from tests.helpers import init_repo


def _repo(tmp_path: Path, toml: str) -> Path:
    repo = init_repo(tmp_path / "repo")
    (repo / "evalcase.toml").write_text(toml, "utf-8")
    return repo


def test_judge_settings_and_the_variables_over_them(tmp_path: Path) -> None:
    repo = _repo(tmp_path, '[run.judge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
                           "max_retries = 1\ntimeout_s = 5\n")  # fmt: skip
    environ = {"EVALCASE_JUDGE_MODEL": "other", "EVALCASE_JUDGE_CACHE_DIR": str(tmp_path / "c")}
    judge = context_from(load_config(repo), environ).judge
    assert (judge.base_url, judge.model, judge.max_retries, judge.timeout_s) == (
        "http://127.0.0.1:9/v1", "other", 1, 5.0,
    )  # fmt: skip
    assert (judge.cache_dir, judge.api_key_env, judge.pass_threshold) == (
        tmp_path / "c", "EVALCASE_JUDGE_API_KEY", 0.6,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('max_retries = "three"', "max_retries: must be a number, not 'three'"),
        ("timeout_s = [5]", "timeout_s: must be a number, not [5]"),
        ("model = { name = 'm' }", "model: must be a string, not dict"),
    ],
)
def test_a_judge_setting_of_the_wrong_kind_is_a_clear_error(
    tmp_path: Path, line: str, said: str
) -> None:
    config = load_config(_repo(tmp_path, f"[run.judge]\n{line}\n"))
    with pytest.raises(FatalError) as caught:
        context_from(config, {})
    assert str(caught.value) == (
        f"evalcase.toml: judge setting {said} ([grade.judge], docs/configuration.md)"
    )
