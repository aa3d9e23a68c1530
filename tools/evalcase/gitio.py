"""The only place evalcase talks to git. Built on GitPython, except on the commit hook's
path.

Commands other than lint (``evalcase tag``, ``init``, ``new``, ``run``'s record of what it
ran) reach git through GitPython: a :class:`git.Repo` opened on first use, its refs and
tags, and its command runner. What ``evalcase lint`` asks (the commit hook runs it on every
commit) goes to the git command line directly, through the same executable, without
importing GitPython: importing it starts ``git version`` twice (once to check the
executable, once for its fetch parser) and costs about a tenth of a second, a fifth of the
hook at 100,000 cases; and on each question lint asks, the plain command is as fast or
faster (``benchmarks/git_bench.py``, figures in docs/performance-lint.md).

Reading many files at a revision never starts one process per file: blobs are read
through one persistent ``git cat-file --batch`` stream, requests pipelined a thousand at a
time (GitPython's object database asks for one object at a time: twice as long for
every file of a repository), and changed paths with their old and new blob ids come from
one ``git diff --raw -z`` call.

The git executable is GitPython's: ``GIT_PYTHON_GIT_EXECUTABLE`` when set, else ``git``
from ``PATH``, for both paths.

The case repository may be a subfolder of the git repository (``evals/`` of an
application): :class:`Repo` is opened on the case repository's root and speaks in paths
relative to it. It adds the folder's prefix to every path it gives git and removes it
from every path git returns, so nothing above this module knows about the prefix.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalcase.model import FatalError

if TYPE_CHECKING:
    import git

NULL_BLOB = "0" * 40


# Object IDs per write to cat-file: 1,000 x 41 bytes stays under a pipe buffer (64 KiB).
_CAT_FILE_BATCH = 1000
# Bytes of requests written to cat-file before its answers are read: under a pipe's
# buffer, so that writing never waits for git while git waits for us.
_CAT_FILE_REQUEST_BYTES = 32_000
# Objects one cat-file process serves before it is replaced (see Repo.read_blobs).
_CAT_FILE_RECYCLE = 5000

# While a run holds HEAD still (see one_head): the commit HEAD names per work tree (None:
# nothing committed yet), innermost run last.
_HEADS: list[dict[Path, str | None]] = []


@contextmanager
def one_head() -> Iterator[None]:
    """Within the block, every Repo of a work tree answers has_commits() (and the
    rev_parse("HEAD") after it) with the commit HEAD named the first time one asked.

    A lint run opens the repository in several places (the history checks, the store's
    state), and each asked git where HEAD is, one process each; the run is about one
    HEAD anyway."""
    _HEADS.append({})
    try:
        yield
    finally:
        _HEADS.pop()


class GitError(Exception):
    """A git command that exited with an error status."""

    def __init__(self, args: Sequence[str], status: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args)} exited with status {status}: {stderr}")
        self.status = status
        self.stderr = stderr


@dataclass(frozen=True)
class Change:
    """One entry of ``git diff --raw``: status is A, M, D, R or C (R/C carry old_path)."""

    status: str
    path: str
    old_path: str
    old_blob: str
    new_blob: str
    old_mode: str = ""
    new_mode: str = ""


@dataclass(frozen=True)
class Tag:
    name: str
    commit: str
    message: str
    # The tag object (an annotated tag: it changes with the message) or the commit.
    object: str = ""


def find_top(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder`` (itself or an ancestor), if any."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _is_git_dir(top: Path) -> bool:
    """Whether ``top/.git`` is a git directory, or a file pointing at one (a linked work
    tree, a submodule): HEAD, and objects and refs in it or in its common directory."""
    dotgit = top / ".git"
    gitdir = dotgit
    if dotgit.is_file():
        try:
            line = dotgit.read_text("utf-8", "surrogateescape").strip()
        except OSError:
            return False
        if not line.startswith("gitdir:"):
            return False
        gitdir = top / line[len("gitdir:") :].strip()
    try:
        common = gitdir / (gitdir / "commondir").read_text("utf-8").strip()
    except OSError:
        common = gitdir
    head = gitdir / "HEAD"
    return (
        (head.is_file() or head.is_symlink())
        and ((common / "objects").is_dir() or "GIT_OBJECT_DIRECTORY" in os.environ)
        and (common / "refs").is_dir()
    )


def common_dir(folder: Path) -> Path | None:
    """The common git directory of the repository holding ``folder`` (``.git`` itself,
    or what a linked work tree's or a submodule's ``.git`` file points at, then its
    ``commondir``): where every work tree of one repository keeps what git never
    carries. Read from files, no git process (lint's EC420 asks on the hook's path);
    None outside a git repository."""
    top = find_top(folder)
    if top is None or not _is_git_dir(top):
        return None
    gitdir = top / ".git"
    if gitdir.is_file():
        line = gitdir.read_text("utf-8", "surrogateescape").strip()
        gitdir = top / line[len("gitdir:") :].strip()
    try:
        return (gitdir / (gitdir / "commondir").read_text("utf-8").strip()).resolve()
    except OSError:
        return gitdir.resolve()


def _git_env() -> dict[str, str]:
    # Messages and dates git prints in English whatever the user's language (GitPython
    # sets the same two for the commands it runs).
    return {**os.environ, "LANGUAGE": "C", "LC_ALL": "C"}


# GitPython's setting, read by both paths: the git command to run.
EXECUTABLE_VARIABLE = "GIT_PYTHON_GIT_EXECUTABLE"


def executable() -> str:
    """The git command evalcase runs: GitPython's once it is loaded (``git.refresh`` may
    have set it), else what GitPython would take, ``GIT_PYTHON_GIT_EXECUTABLE`` or ``git``."""
    cmd = sys.modules.get("git.cmd")
    chosen = getattr(getattr(cmd, "Git", None), "GIT_PYTHON_GIT_EXECUTABLE", None)
    return str(chosen or os.environ.get(EXECUTABLE_VARIABLE) or "git")


def _cannot_run(reason: str) -> FatalError:
    return FatalError(
        f"cannot run git ({executable()}): {reason}; put git on PATH or set "
        f"{EXECUTABLE_VARIABLE} to a git executable"
    )


def _gitpython_stderr(exc: git.GitCommandError) -> str:
    """What git printed, without the framing GitPython puts around it."""
    text = str(exc.stderr).strip()
    return text.removeprefix("stderr: '").removesuffix("'").strip()


class Repo:
    def __init__(self, root: Path) -> None:
        top = find_top(root)
        if top is None or not _is_git_dir(top):
            raise FatalError(f"{root} is not in a git repository")
        self.top = top
        self.root = root.resolve()
        rel = self.root.relative_to(self.top).as_posix()
        # "" at the top of the work tree, else "evals/": added to paths given to git,
        # removed from paths git returns.
        self.prefix = "" if rel == "." else f"{rel}/"
        self._cat: subprocess.Popen[bytes] | None = None
        self._cat_served = 0
        # GitPython's Repo, opened by the first method that goes through it.
        self._gitpython_repo: git.Repo | None = None
        # The commit has_commits() found HEAD at, for the rev_parse("HEAD") callers make
        # right after it (see has_commits).
        self._head: str | None = None

    def _git(self, *args: str, strip_newline: bool = True) -> str:
        """The standard output of one git command run at the top of the work tree, with
        its final newline removed unless ``strip_newline`` is false; GitError when git
        exits with an error."""
        try:
            proc = subprocess.run(
                [executable(), *args],
                cwd=self.top,
                env=_git_env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
        except OSError as exc:
            raise _cannot_run(exc.strerror or str(exc)) from exc
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "surrogateescape").rstrip("\n")
            raise GitError(args, proc.returncode, stderr)
        out = proc.stdout
        if strip_newline and out.endswith(b"\n"):
            out = out[:-1]
        return out.decode("utf-8", "surrogateescape")

    def _gitpython(self) -> git.Repo:
        """GitPython's Repo of the work tree, imported and opened on first use (never on
        the commit hook's path: see the module's docstring)."""
        if self._gitpython_repo is None:
            try:
                import git
            except ModuleNotFoundError as exc:
                raise FatalError(f"evalcase needs GitPython: {exc}") from exc
            except ImportError as exc:
                # GitPython refuses to load when its git executable does not run (its
                # "git version" check as it is imported).
                raise _cannot_run("GitPython could not run it") from exc
            try:
                self._gitpython_repo = git.Repo(self.top)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
                raise FatalError(f"{self.root} is not in a git repository") from exc
        return self._gitpython_repo

    def _gitpython_command(self, command: str, *args: str, strip_newline: bool = True) -> str:
        """One git command run through GitPython's command runner at the top of the work
        tree; GitError when git exits with an error."""
        runner = getattr(self._gitpython().git, command.replace("-", "_"))
        import git  # loaded by _gitpython(), which turns a failed import into a message

        try:
            return str(runner(*args, strip_newline_in_stdout=strip_newline))
        except git.GitCommandNotFound as exc:
            raise _cannot_run("not found") from exc
        except git.GitCommandError as exc:
            status = exc.status if isinstance(exc.status, int) else 1
            raise GitError((command, *args), status, _gitpython_stderr(exc)) from exc

    @staticmethod
    def is_repo(root: Path) -> bool:
        return find_top(root) is not None

    def _in(self, paths: Sequence[str]) -> list[str]:
        if not self.prefix:
            return list(paths)
        return [f"{self.prefix}{p}" for p in paths] or [self.prefix]

    def _out(self, path: str) -> str | None:
        """A path git returned, relative to the case repository; None outside it."""
        if not self.prefix:
            return path
        return path[len(self.prefix) :] if path.startswith(self.prefix) else None

    def __del__(self) -> None:
        # A Repo nobody closed (a snapshot a command dropped, a library caller's) ends its
        # cat-file process when it goes; a process left running is not ended by its
        # Popen object, so it stayed until this process exited.
        with contextlib.suppress(Exception):
            self._stop_cat_file()

    def close(self) -> None:
        self._stop_cat_file()
        if self._gitpython_repo is not None:
            self._gitpython_repo.close()  # its own cat-file processes, if it started any
            self._gitpython_repo = None

    # --- revisions -------------------------------------------------------------------
    def rev_parse(self, rev: str) -> str:
        if rev == "HEAD" and self._head is not None:
            head, self._head = self._head, None
            return head
        try:
            return self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        except GitError as exc:
            raise FatalError(f"unknown revision '{rev}'") from exc

    def remote_url(self, name: str = "origin") -> str | None:
        """The URL of a remote (as git rewrites it: ``url.*.insteadOf``), or None when
        there is no such remote."""
        repo = self._gitpython()
        import git

        try:
            remote = repo.remote(name)
            return next((url.strip() for url in remote.urls if url.strip()), None)
        except (ValueError, git.GitCommandError):  # no such remote; one without a URL
            return None

    def has_commits(self) -> bool:
        """Whether HEAD names a commit. Callers that go on to ``rev_parse("HEAD")`` (the
        commit hook does twice) get the commit found here instead of starting a second
        git process for the same answer; only that next call, so that a Repo kept open
        while HEAD moves does not answer with an old commit later."""
        known = _HEADS[-1] if _HEADS else None
        if known is not None and self.top in known:
            self._head = known[self.top]
            return self._head is not None
        try:
            self._head = self._git("rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()
        except GitError:
            self._head = None
        if known is not None:
            known[self.top] = self._head
        return self._head is not None

    def merge_base(self, a: str, b: str) -> str:
        try:
            return self._git("merge-base", a, b).strip()
        except GitError as exc:
            raise FatalError(f"'{a}' and '{b}' have no common ancestor") from exc

    def symbolic_full_name(self, rev: str) -> str:
        """refs/heads/..., refs/remotes/..., refs/tags/... for a ref name; '' otherwise."""
        try:
            return self._git("rev-parse", "--symbolic-full-name", rev).strip()
        except GitError:
            return ""

    def branches(self) -> list[str]:
        """Every local and remote-tracking branch, by full name (refs/heads/...,
        refs/remotes/...), a remote's symbolic HEAD left out."""
        out = self._git("for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes")
        return [r for r in out.splitlines() if r and not r.endswith("/HEAD")]

    # --- listing ---------------------------------------------------------------------
    def index_entries(self, roots: Sequence[str]) -> list[tuple[str, str, str, int]]:
        """(path, mode, blob, size=0) for every staged file under roots."""
        out = self._git(
            "ls-files", "-s", "-z", "--full-name", "--", *self._in(roots), strip_newline=False
        )
        entries = []
        for record in out.split("\0"):
            if not record:
                continue
            meta, full = record.split("\t", 1)
            mode, blob, stage = meta.split()
            path = self._out(full)
            if path is None or stage not in ("0", "2"):  # in a merge conflict, take "ours"
                continue
            entries.append((path, mode, blob, 0))
        return entries

    def tree_entries(self, rev: str, roots: Sequence[str]) -> list[tuple[str, str, str, int]]:
        """(path, mode, blob, size) for every file under roots at a commit."""
        out = self._git("ls-tree",
            "-r", "-l", "-z", "--full-tree", rev, "--", *self._in(roots),
            strip_newline=False,
        )  # fmt: skip
        entries = []
        for record in out.split("\0"):
            if not record:
                continue
            meta, full = record.split("\t", 1)
            mode, kind, blob, size = meta.split()
            path = self._out(full)
            if kind != "blob" or path is None:
                continue
            entries.append((path, mode, blob, int(size) if size.isdigit() else 0))
        return entries

    def read_blobs(self, blobs: Iterable[str]) -> dict[str, bytes]:
        """Contents of many blobs through one persistent ``git cat-file --batch`` process.
        Requests go out a batch at a time and answers are read after (not one round trip
        per blob: a cold lint reads every file of the repository this way). Missing blobs
        are left out."""
        wanted = [b for b in dict.fromkeys(blobs) if b != NULL_BLOB]
        out: dict[str, bytes] = {}
        if not wanted:
            return out
        proc = self._cat_file()
        assert proc.stdin is not None and proc.stdout is not None
        # A batch of requests fits in the pipe's buffer, so writing it never waits for
        # git, which may be waiting for us to read its answers.
        for i in range(0, len(wanted), _CAT_FILE_BATCH):
            part = wanted[i : i + _CAT_FILE_BATCH]
            try:
                proc.stdin.write("".join(f"{b}\n" for b in part).encode("ascii"))
                proc.stdin.flush()
                for blob in part:
                    header = proc.stdout.readline().split()
                    if len(header) != 3:
                        if not header:
                            raise OSError("git cat-file ended early")
                        continue  # "<id> missing"
                    data = proc.stdout.read(int(header[2]) + 1)
                    out[blob] = data[:-1]
            except (OSError, ValueError) as exc:
                self._stop_cat_file()
                raise FatalError(f"cannot read file contents from git: {exc}") from exc
            self._cat_served += len(part)
        if self._cat_served >= _CAT_FILE_RECYCLE:
            # cat-file keeps every object it has parsed: a fresh one now and then keeps
            # a cold lint of 100,000 files from holding them all twice.
            self._stop_cat_file()
        return out

    def staged_contents(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The staged (git index) contents of ``paths``, relative to the case repository,
        through the same cat-file stream (``:<path>`` names the index's blob). Paths that
        are not staged, or hold whitespace (cat-file's answer line could not be told from
        its name), are left out."""
        # p.split() == [p]: no whitespace in p (str.isspace's, tested in C: a hook that
        # quotes 30,000 findings asks for as many paths).
        names = {p: f":{self._in([p])[0]}" for p in paths if p.split() == [p]}
        # read_blobs writes a batch of requests before reading any answer, which is safe
        # while a batch fits in the pipe's buffer (64 KB): 1,000 object IDs do, 1,000
        # paths may not (git would stop reading to write its answers, and both wait).
        blobs: dict[str, bytes] = {}
        chunk: list[str] = []
        size = 0
        for name in names.values():
            if chunk and size + len(name.encode("utf-8")) + 1 > _CAT_FILE_REQUEST_BYTES:
                blobs.update(self.read_blobs(chunk))
                chunk, size = [], 0
            chunk.append(name)
            size += len(name.encode("utf-8")) + 1
        if chunk:
            blobs.update(self.read_blobs(chunk))
        return {p: blobs[n] for p, n in names.items() if n in blobs}

    def _cat_file(self) -> subprocess.Popen[bytes]:
        if self._cat is None or self._cat.poll() is not None:
            try:
                self._cat = subprocess.Popen(
                    [executable(), "cat-file", "--batch"],
                    cwd=self.top,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            except OSError as exc:
                raise _cannot_run(exc.strerror or str(exc)) from exc
        return self._cat

    def _stop_cat_file(self) -> None:
        proc, self._cat = self._cat, None
        self._cat_served = 0
        if proc is not None:
            # It only reads: nothing is lost by killing it, and waiting for it to notice
            # its closed input can take a second here.
            proc.kill()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
            proc.wait()

    def diff_raw(self, base: str, *, cached: bool, paths: Sequence[str]) -> list[Change]:
        """What changed from ``base`` to the index (cached) or the work tree, in one call."""
        args = ["--raw", "-z", "--no-abbrev", "-M", "--no-ext-diff"]
        if cached:
            args.append("--cached")
        out = self._git("diff", *args, base, "--", *self._in(paths), strip_newline=False)
        return self._changes_out(parse_raw_diff(out))

    def _changes_out(self, raw: list[Change]) -> list[Change]:
        """Changes with the folder's prefix removed; those outside it dropped."""
        if not self.prefix:
            return raw
        changes = []
        for change in raw:
            path, old_path = self._out(change.path), self._out(change.old_path)
            if path is None and old_path is None:
                continue
            # A file moved in from outside the case repository counts as added; one moved
            # out of it as deleted.
            if path is None:
                changes.append(
                    replace(change, status="D", path=old_path or "", old_path=old_path or "")
                )
            elif old_path is None:
                changes.append(replace(change, status="A", path=path, old_path=path))
            else:
                changes.append(replace(change, path=path, old_path=old_path))
        return changes

    def paths_in_history(self, roots: Sequence[str]) -> set[str]:
        """Every path under ``roots`` that any commit of any ref ever added or changed,
        deleted ones included (one ``git log`` call)."""
        if not self.has_commits():
            return set()
        out = self._gitpython_command(
            "log", "--all", "--format=", "--name-only", "--no-renames", "--", *self._in(roots)
        )
        return {p for p in (self._out(line) for line in out.splitlines() if line) if p}

    def diff_index(self, rev: str, *, cached: bool, paths: Sequence[str]) -> list[Change]:
        """What differs between commit ``rev`` and the index (cached) or the work tree,
        without rename detection, in one ``git diff-index``. For work-tree files git has
        not hashed (their index stat data is stale) the new blob is ``NULL_BLOB``."""
        args = ["--raw", "-z", "--no-abbrev", "--no-renames"]
        if cached:
            args.append("--cached")
        out = self._git("diff-index", *args, rev, "--", *self._in(paths), strip_newline=False)
        return self._changes_out(parse_raw_diff(out))

    def diff_tree(self, old: str, new: str, paths: Sequence[str]) -> list[Change]:
        """What differs between two commits, without rename detection, in one call."""
        args = ["-r", "--raw", "-z", "--no-abbrev", "--no-renames"]
        out = self._git("diff-tree", *args, old, new, "--", *self._in(paths), strip_newline=False)
        return self._changes_out(parse_raw_diff(out))

    def is_commit(self, rev: str) -> bool:
        """Whether ``rev`` names a commit this repository has (e.g. after a gc)."""
        try:
            self._git("cat-file", "-e", f"{rev}^{{commit}}")
            return True
        except GitError:
            return False

    def tags(self, pattern: str = "", *, messages: bool = True) -> list[Tag]:
        """Annotated and lightweight tags with the commit they point at and their message,
        from one for-each-ref call. No pattern: every tag, including names with slashes.
        ``messages=False``: leave messages empty (a release of 100,000 cases has a 13 MB
        one); the tag object's id still tells whether a message changed."""
        # Five NUL-terminated fields a tag (messages never hold NUL; the peeled name is
        # empty for lightweight tags, so fields are counted, not split on "\0\0"). A
        # lightweight tag has no message of its own: %(contents) would be the commit's.
        contents = "%(contents)" if messages else ""
        fmt = f"%(refname)%00%(objecttype)%00%(*objectname)%00%(objectname)%00{contents}%00"
        ref_pattern = f"refs/tags/{pattern}" if pattern else "refs/tags"
        out = self._git("for-each-ref", f"--format={fmt}", ref_pattern, strip_newline=False)
        fields = out.split("\0")
        tags = []
        for i in range(0, len(fields) - 4, 5):
            name, kind, peeled, obj, message = fields[i : i + 5]
            name = name.lstrip("\n")
            if name:
                message = message if kind == "tag" else ""
                tags.append(Tag(name.removeprefix("refs/tags/"), peeled or obj, message, obj))
        return tags

    def status_porcelain(self) -> str:
        """Uncommitted changes in the case repository (the rest of the git repository,
        an application around it, is not evalcase's to judge)."""
        return self._gitpython_command(
            "status", "--porcelain", "--untracked-files=all", "--", *self._in([])
        )

    def dirty_paths(self, roots: Sequence[str]) -> list[str]:
        """Paths with uncommitted changes: tracked files anywhere, untracked (not ignored)
        files under ``roots``. What makes a run's commit not describe its inputs."""
        repo = self._gitpython()
        # Staged or modified tracked files (GitPython's diff against the index and HEAD).
        out = list(
            dict.fromkeys(
                str(d.b_path or d.a_path)
                for other in (None, "HEAD")
                for d in repo.index.diff(other)
            )
        )
        if roots:
            extra = self._gitpython_command(
                "ls-files", "--others", "--exclude-standard", "-z", "--", *self._in(roots)
            )
            out += [p for p in extra.split("\0") if p]
        return out

    def untracked(self, roots: Sequence[str]) -> list[str]:
        """Files under roots that git does not track (ignored ones included), in one call."""
        out = self._git(
            "ls-files", "--others", "-z", "--full-name", "--", *self._in(roots), strip_newline=False
        )
        return [p for p in (self._out(f) for f in out.split("\0") if f) if p]

    def tracked(self, roots: Sequence[str]) -> list[str]:
        """Files under roots that git tracks (in the index), relative to the case repository."""
        out = self._git(
            "ls-files", "-z", "--full-name", "--", *self._in(roots), strip_newline=False
        )
        return [p for p in (self._out(f) for f in out.split("\0") if f) if p]

    def tracks_any(self, path: str) -> bool:
        """Whether git tracks any file at or under ``path`` (in the index)."""
        out = self._git("ls-files", "-z", "--", *self._in([path]), strip_newline=False)
        return bool(out.strip("\0"))

    def create_annotated_tag(self, name: str, message: str, commit: str = "HEAD") -> None:
        """Create an annotated tag; never moves an existing one (git refuses without -f)."""
        import tempfile

        # The message lists every case of the release: at 100,000 cases it is megabytes,
        # more than a command line holds, so git reads it from a file.
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt") as handle:
            handle.write(message)
            handle.flush()
            repo = self._gitpython()
            import git

            try:
                # --file is one of the options GitPython refuses unless told: it names a
                # file git reads, and here that is the file just written, nothing else.
                # The name and commit still go after "--", never read as options.
                repo.create_tag(
                    name,
                    commit,
                    allow_unsafe_options=True,
                    a=True,
                    file=handle.name,
                    cleanup="verbatim",
                )
            except git.GitCommandNotFound as exc:
                raise _cannot_run("not found") from exc
            except git.GitCommandError as exc:
                raise FatalError(
                    f"git could not create tag '{name}': {_gitpython_stderr(exc)}"
                ) from exc


def parse_raw_diff(out: str) -> list[Change]:
    """Parse ``git diff --raw -z`` output."""
    changes = []
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        meta = fields[i]
        if not meta.startswith(":"):
            i += 1
            continue
        old_mode, new_mode, old_blob, new_blob, status = meta[1:].split()
        letter = status[0]
        if letter in ("R", "C"):
            old_path, path = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old_path = path = fields[i + 1]
            i += 2
        changes.append(Change(letter, path, old_path, old_blob, new_blob, old_mode, new_mode))
    return changes
