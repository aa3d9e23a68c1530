"""report.html in real headless Chromium (Debian's chromium package): it renders from disk
with no network, the summary table is there, the sorting script ran, and a screenshot is
saved."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.grade.runs import check_008, duplicate_003, gift_observation, refund_repo, write_run
from tests.helpers import invoke

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# CI installs chromium (.ci/run), so there a missing browser fails instead of skipping.
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="needs Debian's chromium (.ci/run installs it)",
)


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo, commit = refund_repo(tmp_path_factory.mktemp("html"))
    attempts = [
        check_008(True, 1),
        check_008(True, 2),
        duplicate_003(False, 1),
        duplicate_003(True, 2),
        gift_observation(),
    ]
    write_run(repo, commit, "run-html", attempts)
    invoke("grade", "run-html", cwd=repo)
    path = repo / "reports" / commit / "run-html" / "report.html"
    assert path.is_file()
    return path


def test_self_contained(report_html: Path) -> None:
    html = report_html.read_text("utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "loads nothing"
    assert "@import" not in html and "url(" not in html


@pytest.mark.slow
def test_renders_in_headless_chromium(report_html: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path / "profile-dom", "--dump-dom", report_html.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert '<table id="summary">' in dom.stdout
    assert 'data-sortable="ready"' in dom.stdout, "the inline script ran"
    summary = dom.stdout.split('<table id="summary">', 1)[1].split("</table>", 1)[0]
    assert "pass@1" in summary and "pass^k" in summary
    assert dom.stdout.index('id="summary"') < dom.stdout.index('id="cases"'), "summary first"
    assert "agent_refund_duplicate_submit_003" in dom.stdout  # a failing case, expandable
    assert "<svg" in dom.stdout


def test_screenshot(report_html: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    proc = chromium(
        tmp_path / "profile-shot",
        f"--screenshot={shot}",
        "--window-size=1280,1600",
        "--hide-scrollbars",
        report_html.as_uri(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a rendered page, not a blank image
