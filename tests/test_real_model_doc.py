"""docs/real-model.md works as written: its shell steps are valid bash, it installs
evalcase's ``[openai]`` extra before ``evalcase run --agent openai:``, takes free ports
(no fixed one), turns Needle's telemetry off before starting it, runs llama.cpp with one
thread in the very script ``benchmarks/real_model.py`` runs, and says the small packaged
models cannot judge. (The models themselves are not run here: minutes per attempt; the
page's figures come from running these steps.)"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from types import ModuleType

from tests.helpers import REPO_ROOT, module_from

DOC = (REPO_ROOT / "docs" / "real-model.md").read_text("utf-8")


def _benchmark() -> ModuleType:
    return module_from(REPO_ROOT / "benchmarks" / "real_model.py", "real_model")


def _console() -> str:
    """The page's console blocks as one script: each ``$ `` line a command, a heredoc's
    lines with it."""
    blocks = re.findall(r"```console\n(.*?)```", DOC, re.S)
    lines = []
    for block in blocks:
        for line in block.splitlines():
            lines.append(line[2:] if line.startswith("$ ") else line)
    return "\n".join(lines) + "\n"


def test_the_shell_steps_are_valid_bash() -> None:
    proc = subprocess.run(
        ["bash", "-n"], input=_console(), capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_the_steps_come_in_an_order_that_works() -> None:
    script = _console()
    extra = script.index("pip install -e .")
    telemetry = script.index("export NEEDLE_TELEMETRY=0 DO_NOT_TRACK=1")
    needle = script.index("needle-openai --host 127.0.0.1")
    first_run = script.index("evalcase run ")
    assert extra < first_run and telemetry < needle
    # every port is one the kernel chose, none fixed
    assert "NEEDLE_PORT=$(free_port); GEMMA_PORT=$(free_port)" in script
    assert not re.search(r"127\.0\.0\.1:\d", script), "a fixed port"
    assert '--port "$NEEDLE_PORT"' in script and 'gemma_server.py "$GEMMA_PORT"' in script


def test_the_free_port_function_gives_a_port_one_can_bind() -> None:
    script = _console()
    (definition,) = [line for line in script.splitlines() if line.startswith("free_port()")]
    proc = subprocess.run(
        ["bash", "-c", f"{definition}\nfree_port"],
        capture_output=True,
        text=True,
        check=False,
    )
    port = int(proc.stdout)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert _benchmark().free_port() > 0


def test_llama_cpp_runs_on_one_thread_in_the_script_the_benchmark_runs() -> None:
    match = re.search(r"\$ cat > /tmp/gemma_server.py <<'PY'\n(.*?)\nPY\n", DOC, re.S)
    assert match is not None
    script = match.group(1)
    compile(script, "gemma_server.py", "exec")
    assert "params.cpuparams.n_threads = 1" in script
    assert "params.cpuparams_batch.n_threads = 1" in script
    assert _benchmark().GEMMA_SERVER.strip() == script.strip()
    assert _benchmark().NO_TELEMETRY == {"NEEDLE_TELEMETRY": "0", "DO_NOT_TRACK": "1"}


def test_the_page_says_the_small_models_cannot_judge() -> None:
    assert "the small packaged models cannot judge" in DOC
    assert "26 of 27 verdicts gave every dimension the same score" in DOC
    assert "a deliberately\nwrong agent got 5 of 5" in DOC


def test_the_install_hint_evalcase_prints_is_a_reinstall() -> None:
    from evalcase import transport

    assert "reinstall evalcase" in transport.INSTALL_HINT and "[" not in transport.INSTALL_HINT
    assert sys.version_info >= (3, 11)
