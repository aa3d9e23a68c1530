"""`evalcase init DIR`: a new repository of evaluation cases that works at once.

It writes the layout (datasets/, fixtures/), ``evalcase.toml`` with the team's own
domain and ability vocabularies, one example dataset whose case reads a state fixture,
calls a tool and is judged against a rubric, a copy of evalcase's JSON schemas and the
editor mapping of those schemas onto cases, manifests and fixtures (YAML language
server), ``.pre-commit-config.yaml`` using evalcase's published hooks at this version,
a CI workflow that lints pull requests against their base branch and runs the smoke
suite, and a ``.gitignore`` for outputs, reports and the lint cache.

``evalcase lint`` and ``pre-commit run --all-files`` pass in the result straight away.
Nothing is overwritten: a file that already exists stops init before anything is
written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from evalcase import __version__
from evalcase.model import FatalError
from evalcase.schemas import schema_dir

TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_DOMAINS = ("support",)
DEFAULT_ABILITIES = ("order", "refund", "policy")
# Where evalcase's hooks are published when this copy does not run from a git checkout.
PUBLISHED_REPO = "https://github.com/evalcase/evalcase"
# The CI variable that says where to install evalcase from when init's hooks repository
# is a path on the machine that ran it.
CI_VARIABLE = "EVALCASE_PIP_SPEC"
_WORD = re.compile(r"^[a-z][a-z0-9]*$")

# Editor mapping: schema file -> the globs it describes (YAML language server syntax).
SCHEMA_MAP = {
    "case.schema.json": ["datasets/**/cases/*.yaml"],
    "dataset.schema.json": ["datasets/*/dataset.yaml"],
    "fixture.schema.json": ["fixtures/**/*.yaml"],
}


@dataclass(frozen=True)
class Hooks:
    """Where .pre-commit-config.yaml and CI take evalcase from."""

    repo: str
    rev: str

    @property
    def pip_spec(self) -> str:
        """evalcase at this commit of its git repository, never a package index name: the
        project publishes no package, and a name on an index is whoever registers it."""
        if self.repo.startswith(("https://", "http://", "ssh://", "file://")):
            return f"evalcase @ git+{self.repo}@{self.rev}"
        if self.repo.startswith("git@"):
            host, _, path = self.repo.removeprefix("git@").partition(":")
            return f"evalcase @ git+ssh://git@{host}/{path}@{self.rev}"
        return f"evalcase @ git+{Path(self.repo).resolve().as_uri()}@{self.rev}"

    @property
    def shared(self) -> bool:
        """Whether other machines can reach the hooks repository: a URL of a server
        (https, http, ssh, ``git@host:path``), not a path or ``file://`` URL of this one,
        which works for pre-commit here and for no clone elsewhere, nor in CI."""
        return self.repo.startswith(("https://", "http://", "ssh://", "git@"))

    def unshared_warning(self) -> str | None:
        """What to do when the hooks repository is local to this machine, else None."""
        if self.shared:
            return None
        return (
            f"warning: the hooks repository {self.repo} is a path on this machine: "
            "pre-commit works here, but other clones cannot install the hooks and CI "
            "cannot install evalcase. Push evalcase to a git server your team reaches, "
            "then set its URL in .pre-commit-config.yaml (repo:) and the CI variable "
            f"{CI_VARIABLE} (a pip requirement such as "
            f"'evalcase @ git+https://git.example.com/evalcase.git@{self.rev}'), or run "
            "init again with --hooks-repo URL"
        )

    @property
    def ci_default(self) -> str:
        """The pip requirement CI installs unless the repository variable
        ``EVALCASE_PIP_SPEC`` says otherwise: this one when CI can reach it, else none
        (the workflow then fails saying what to set, never with a path of the machine
        that ran init)."""
        return self.pip_spec if self.shared else ""


@dataclass(frozen=True)
class InitResult:
    root: Path
    dataset_id: str
    case_id: str
    files: tuple[str, ...]
    hooks: Hooks

    @property
    def example_stem(self) -> str:
        """A scenario stem the printed hints can use as is (the team's own first words)."""
        return "_".join(self.case_id.split("_")[:2]) + "_delayed_delivery"


def default_hooks() -> Hooks:
    """This evalcase's own checkout at its current commit when it runs from one (the
    only published form today: there is no release tag yet), else the git repository and
    commit pip installed it from, else the release tag."""
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / ".pre-commit-hooks.yaml").is_file() and (checkout / ".git").exists():
        from evalcase.gitio import Repo

        try:
            repo = Repo(checkout)
            rev = repo.rev_parse("HEAD")
            origin = repo.remote_url()
        except FatalError:
            return Hooks(PUBLISHED_REPO, f"v{__version__}")
        return Hooks(origin or str(checkout), rev)
    installed = _installed_from_git()
    if installed is not None:
        return installed
    return Hooks(PUBLISHED_REPO, f"v{__version__}")


def _installed_from_git() -> Hooks | None:
    """The repository and commit pip installed this evalcase from (PEP 610
    direct_url.json), when it was installed from git."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        raw = distribution("evalcase").read_text("direct_url.json")
        info = json.loads(raw) if raw else {}
    except (PackageNotFoundError, ValueError):
        return None
    vcs = info.get("vcs_info") if isinstance(info, dict) else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git" or not vcs.get("commit_id"):
        return None
    return Hooks(str(info.get("url", PUBLISHED_REPO)), str(vcs["commit_id"]))


def check_words(kind: str, words: tuple[str, ...]) -> tuple[str, ...]:
    """Lower-case identifier words, at least one; a FatalError names a bad one."""
    if not words:
        raise FatalError(f"give at least one {kind}")
    for word in words:
        if not _WORD.match(word):
            raise FatalError(
                f"'{word}' cannot be a case-ID {kind}: use lower-case letters and digits, "
                "starting with a letter (it becomes the first or second word of case IDs)"
            )
    return tuple(dict.fromkeys(words))


def _render(name: str, values: dict[str, str]) -> str:
    return Template((TEMPLATES / name).read_text("utf-8")).substitute(values)


def plan(
    domains: tuple[str, ...], abilities: tuple[str, ...], owner: str, hooks: Hooks
) -> tuple[str, str, dict[str, str]]:
    """(dataset_id, case_id, {relative path: content}) for a new repository."""
    domains = check_words("domain", domains)
    abilities = check_words("ability", abilities)
    if not re.match(r"^[a-z][a-z0-9_]*$", owner):
        raise FatalError(f"owner '{owner}' must be an identifier such as ai_eval_team")
    domain, ability = domains[0], abilities[0]
    dataset_id = f"{domain}_regression_set"
    case_id = f"{domain}_{ability}_shipped_status_001"
    values = {
        "version": __version__,
        "domains": json.dumps(list(domains)),
        "abilities": json.dumps(list(abilities)),
        "domain": domain,
        "dataset": dataset_id,
        "case_id": case_id,
        "stem": f"{domain}_{ability}_delayed_delivery",
        "owner": owner,
        "hooks_repo": hooks.repo,
        "hooks_rev": hooks.rev,
        "pip_spec": hooks.pip_spec,
        "ci_default": hooks.ci_default,
        "ci_variable": CI_VARIABLE,
    }
    files = {
        "evalcase.toml": _render("evalcase.toml", values),
        f"datasets/{dataset_id}/dataset.yaml": _render("dataset.yaml", values),
        f"datasets/{dataset_id}/cases/{case_id}.yaml": _render("case.yaml", values),
        f"fixtures/state/{domain}_order_shipped.yaml": _render("state.yaml", values),
        "fixtures/tool/order_lookup.yaml": _render("tool.yaml", values),
        f"fixtures/rubric/{domain}_answer_quality_v1.yaml": _render("rubric.yaml", values),
        ".pre-commit-config.yaml": _render("pre-commit-config.yaml", values),
        ".github/workflows/evalcase.yml": _render("workflow.yml", values),
        ".gitignore": _render("gitignore", values),
        ".vscode/extensions.json": _render("vscode-extensions.json", values),
        ".vscode/settings.json": editor_settings(),
        "README.md": _render("README.md", values),
    }
    for schema in sorted(schema_dir().glob("*.schema.json")):
        files[f"schemas/{schema.name}"] = schema.read_text("utf-8")
    return dataset_id, case_id, files


def editor_settings() -> str:
    """VS Code settings mapping the schemas onto the files they describe."""
    mapping = {f"./schemas/{name}": globs for name, globs in SCHEMA_MAP.items()}
    settings = {
        "yaml.schemas": mapping,
        "yaml.validate": True,
        "yaml.completion": True,
        "yaml.hover": True,
    }
    return json.dumps(settings, indent=2) + "\n"


def init_repository(
    root: Path,
    domains: tuple[str, ...] = DEFAULT_DOMAINS,
    abilities: tuple[str, ...] = DEFAULT_ABILITIES,
    owner: str = "ai_eval_team",
    hooks: Hooks | None = None,
) -> InitResult:
    """Write a new case repository at ``root`` (created if missing)."""
    hooks = hooks or default_hooks()
    dataset_id, case_id, files = plan(domains, abilities, owner, hooks)
    if root.exists() and not root.is_dir():
        raise FatalError(f"{root} exists and is not a folder")
    clashes = sorted(p for p in files if (root / p).exists())
    if clashes:
        raise FatalError(
            f"{root} already has {', '.join(clashes[:5])}"
            + (f" and {len(clashes) - 5} more" if len(clashes) > 5 else "")
            + "; init writes a new repository and overwrites nothing"
        )
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, "utf-8")
    return InitResult(root, dataset_id, case_id, tuple(files), hooks)
