"""tests/wheelhouse.py: the installed distributions repacked as wheels, so that the
published hook's environment is built by pip offline (tests/published_hook.py). That pip
installs from it is what the hook tests show: they build the environment with no index
(tests/authoring/test_init.py, tests/versioning/test_precommit.py,
tests/versioning/test_subfolder.py, tests/lint/test_hook_reach.py)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests import wheelhouse
from tests.helpers import REPO_ROOT


def test_the_closure_follows_requirements_and_leaves_other_interpreters_markers() -> None:
    names = {d.metadata["Name"].lower() for d in wheelhouse.closure(["jsonschema", "hatchling"])}
    assert {"jsonschema", "attrs", "referencing", "rpds-py", "hatchling", "pathspec"} <= names
    # hatchling asks for tomli only below Python 3.11; this is 3.11 or later
    assert "tomli" not in names


def test_the_projects_requirements_are_its_dependencies_and_its_build_backend() -> None:
    wanted = wheelhouse.project_requirements(REPO_ROOT / "pyproject.toml")
    assert any(r.startswith("hatchling") for r in wanted)
    assert any(r.startswith("click") for r in wanted)


def test_a_repacked_wheel_holds_the_installed_files_and_a_true_record(tmp_path: Path) -> None:
    dist = metadata.distribution("click")
    path = wheelhouse.repack(dist, tmp_path)
    assert path.name == f"click-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        info = f"click-{dist.version}.dist-info"
        assert {f"{info}/METADATA", f"{info}/WHEEL", f"{info}/RECORD"} <= names
        assert f"{info}/INSTALLER" not in names
        assert not [n for n in names if n.endswith(".pyc") or n.startswith("..")]
        record = whl.read(f"{info}/RECORD").decode().splitlines()
        listed = {line.split(",")[0] for line in record}
        assert listed == names
        for line in record:
            name, digest, size = line.split(",")
            if name.endswith("/RECORD"):
                continue
            data = whl.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == f"sha256={want.decode()}" and int(size) == len(data), name


def test_a_requirement_that_is_not_installed_is_a_clear_error() -> None:
    with pytest.raises(wheelhouse.WheelhouseError, match="no-such-dist-here is not installed"):
        wheelhouse.closure(["no-such-dist-here>=1"])


def test_the_wheelhouse_is_built_once_per_set_of_versions(tmp_path: Path) -> None:
    first = wheelhouse.cached(["click"], tmp_path)
    (first / "sentinel").write_text("kept", "utf-8")
    assert wheelhouse.cached(["click"], tmp_path) == first  # reused, not built again
    assert (first / "sentinel").is_file()
    assert wheelhouse.cached(["click", "pathspec"], tmp_path) != first
