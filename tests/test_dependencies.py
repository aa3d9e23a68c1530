"""The base install has what the README's quick start shows: the results store, the
viewer and the openai: client; the old extras' names still install."""

from __future__ import annotations

import re
import tomllib

from tests.helpers import REPO_ROOT

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_store_the_viewer_and_the_openai_client_are_base_dependencies() -> None:
    assert {"duckdb", "starlette", "uvicorn", "aiohttp"} <= _names(PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    # Old names kept, so `pip install 'evalcase[results,view]'` still works; nothing in them.
    assert all(extras[name] == [] for name in ("results", "view", "openai", "judge"))
    assert {"remote", "ray", "tau2", "bench"} <= set(extras)


def test_no_message_tells_users_to_install_an_extra_they_already_have() -> None:
    from evalcase import transport
    from evalcase.results import store

    for hint in (transport.INSTALL_HINT, store.INSTALL_HINT):
        assert "evalcase[" not in hint and "reinstall evalcase" in hint
    package = REPO_ROOT / "tools" / "evalcase"
    for path in package.rglob("*.py"):
        text = path.read_text("utf-8")
        for extra in ("results", "view", "openai", "judge"):
            assert f"evalcase[{extra}" not in text, f"{path}: names the {extra} extra"
        assert "needs DuckDB" not in text, path
