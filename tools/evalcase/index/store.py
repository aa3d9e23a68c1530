"""The lint store: what lint computed, in one SQLite database, looked up without decoding
the rest.

Keys are git blob ids (a hash of the bytes), never modification times, which a fresh CI
checkout resets. Everything is valid only for the evalcase code, schemas and config it
was written with (the namespace): a store written under another namespace is emptied.

Tables:

- ``results``: per file (path, blob id), its findings, facts and suppressions (marshal,
  with a crc32), plus the columns the repository-wide lookups need: kind, case ID,
  near-duplicate fingerprint.
- ``refs``: per case (path, blob id), the reference keys it looks up (fixture -> users),
  and its content digest (exact copies under another ID).
- ``entries``: per file (path, blob id), what a dataset's content is made of (see
  evalcase.index.digest): kind, case ID, case_version, content and grouping digests,
  reference keys. Narrow rows, so that "what changed since the release" reads a whole
  dataset's digests without touching the results.
- ``tree``: the candidate files of one commit (path, blob id, mode), normally HEAD. A run
  is that tree plus the few files that differ from it (one ``git diff-index``); the tree
  moves to a new HEAD with one ``git diff-tree``.
- ``tags``: release tag messages as versioning parsed them, by tag object id (a release
  of 100,000 cases has a 13 MB message, read and parsed once).
- ``runs``: the findings of the last few whole runs, keyed by everything they depend on.

The store can make lint faster but never make it pass: a file that is not a SQLite
database, a damaged page, a row whose checksum does not match or a foreign namespace is
ignored and the store rebuilt. Errors while reading raise :class:`StoreError`, which
callers answer by linting without the store.
"""

from __future__ import annotations

import contextlib
import marshal
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

SCHEMA = "evalcase-lint-store-4"
FILE_NAME = "lint.sqlite"
RUNS_KEPT = 4
# SQLite's default limit of host parameters is 999 on old builds.
_BATCH = 500
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by evalcase.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_TABLES = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # A rowid table: results are kilobytes each, and SQLite keeps large rows better in
    # a rowid table than in a WITHOUT ROWID one (inserts of 100,000 rows: 6 s, not 8.5).
    "CREATE TABLE results (path TEXT NOT NULL, blob TEXT NOT NULL, kind TEXT NOT NULL,"
    " case_id TEXT, similarity TEXT, crc INTEGER NOT NULL, raw BLOB NOT NULL,"
    " used INTEGER NOT NULL DEFAULT 0, UNIQUE (path, blob))",
    "CREATE INDEX results_case_id ON results (case_id) WHERE case_id IS NOT NULL",
    "CREATE INDEX results_similarity ON results (similarity) WHERE similarity IS NOT NULL",
    "CREATE INDEX results_kind ON results (kind) WHERE kind != 'case'",
    "CREATE TABLE refs (key TEXT NOT NULL, path TEXT NOT NULL, blob TEXT NOT NULL,"
    " PRIMARY KEY (key, path, blob)) WITHOUT ROWID",
    "CREATE TABLE entries (path TEXT NOT NULL, blob TEXT NOT NULL, kind TEXT NOT NULL,"
    " case_id TEXT, version TEXT NOT NULL, digest TEXT NOT NULL, grouping TEXT NOT NULL,"
    " refs BLOB NOT NULL, PRIMARY KEY (path, blob)) WITHOUT ROWID",
    "CREATE TABLE tree (path TEXT PRIMARY KEY, blob TEXT NOT NULL, mode TEXT NOT NULL)"
    " WITHOUT ROWID",
    "CREATE TABLE tags (key TEXT PRIMARY KEY, crc INTEGER NOT NULL, raw BLOB NOT NULL)",
    "CREATE TABLE runs (key TEXT PRIMARY KEY, at INTEGER NOT NULL, crc INTEGER NOT NULL,"
    " raw BLOB NOT NULL)",
)


# (path, blob, kind, case ID, fingerprint, reference keys, marshalled result, (case_version,
# content digest, grouping digest)): one analysed file as the store keeps it.
StoredResult = tuple[str, str, str, str | None, str | None, Iterable[str], bytes,
                     tuple[str, str, str]]  # fmt: skip
# (path, kind, case ID, case_version, content digest, grouping digest, reference keys as
# stored): a tree file under datasets/ as dataset contents need it; all but the path are
# None for a file without a stored entry.
TreeEntry = tuple[str, str | None, str | None, str | None, str | None, str | None, bytes | None]


class StoreError(Exception):
    """The store could not be read; lint runs without it."""


# The reference-key kind under which a case's execution-and-judging digest is indexed.
CONTENT_KEY = "\0content"


def ref_key(kind: str, value: str) -> str:
    return f"{kind}\0{value}"


def split_ref_key(key: str) -> tuple[str, str]:
    """(kind, value) of a :func:`ref_key`."""
    kind, _, value = key.partition("\0")
    return kind, value


class Store:
    """The SQLite lint store of one repository (``directory``) under one namespace."""

    def __init__(self, directory: Path, namespace: str) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self.namespace = namespace
        self._db: sqlite3.Connection | None = None
        self.broken = False
        self._dirty = False

    # --- opening -----------------------------------------------------------------------
    def db(self) -> sqlite3.Connection:
        if self.broken:
            raise StoreError("store unavailable")
        if self._db is None:
            try:
                self._db = self._open()
            except (sqlite3.Error, OSError) as exc:
                self._fail()
                raise StoreError(str(exc)) from exc
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(_CACHEDIR_TAG)
            (self.directory / ".gitignore").write_text("# Created by evalcase.\n*\n")
        for attempt in range(2):
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            try:
                db.execute("PRAGMA synchronous = OFF")
                db.execute("PRAGMA temp_store = MEMORY")
                db.execute("PRAGMA cache_size = -16000")
                if self._valid(db):
                    db.execute("BEGIN")
                    return db
                db.close()
            except sqlite3.DatabaseError:
                db.close()
                if attempt:
                    raise
            # Not ours, another namespace or damaged: start again from an empty file.
            self._remove()
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            db.execute("PRAGMA synchronous = OFF")
            # Fewer overflow pages for rows of a few kilobytes; set before any table.
            db.execute("PRAGMA page_size = 16384")
            db.execute("BEGIN")
            for statement in _TABLES:
                db.execute(statement)
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("schema", SCHEMA), ("namespace", self.namespace)],
            )
            db.execute("COMMIT")
            db.close()
        raise sqlite3.DatabaseError("could not create the store")

    def _valid(self, db: sqlite3.Connection) -> bool:
        try:
            rows = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            return False
        return rows.get("schema") == SCHEMA and rows.get("namespace") == self.namespace

    def _remove(self) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            target = Path(f"{self.path}{suffix}")
            if target.is_file() or target.is_symlink():
                target.unlink()

    def _fail(self) -> None:
        self.broken = True
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        with contextlib.suppress(OSError):
            self._remove()

    def _guard(self, exc: BaseException) -> StoreError:
        self._fail()
        return StoreError(str(exc))

    # --- per-file results --------------------------------------------------------------
    def get_results(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Any]:
        """Decoded entries for (path, blob) keys; missing and damaged ones are left out."""
        out: dict[tuple[str, str], Any] = {}
        if not keys:
            return out
        try:
            db = self.db()
            by_path: dict[str, str] = dict(keys)
            paths = list(by_path)
            for i in range(0, len(paths), _BATCH):
                part = paths[i : i + _BATCH]
                marks = ",".join("?" * len(part))
                rows = db.execute(
                    f"SELECT path, blob, crc, raw FROM results WHERE path IN ({marks})", part
                ).fetchall()
                for path, blob, crc, raw in rows:
                    if by_path.get(path) == blob:
                        value = _decode(crc, raw)
                        if value is not None:
                            out[(path, blob)] = value
        except StoreError:
            return {}
        except sqlite3.Error as exc:
            self._guard(exc)
            return {}
        return out

    def put_results(self, items: Iterable[StoredResult]) -> None:
        """Store (path, blob, kind, case ID, fingerprint, reference keys, result as
        ``marshal.dumps`` gives it, entry): see :data:`StoredResult`."""
        try:
            db = self.db()
            rows = []
            refs: list[tuple[str, str, str]] = []
            entries = []
            for path, blob, kind, case_id, similarity, keys, raw, entry in items:
                rows.append((path, blob, kind, case_id, similarity, zlib.crc32(raw), raw))
                unique = sorted(set(keys))
                refs.extend((key, path, blob) for key in unique)
                version, digest, grouping = entry
                uses = tuple(k for k in unique if not k.startswith(CONTENT_KEY))
                entries.append(
                    (path, blob, kind, case_id, version, digest, grouping, marshal.dumps(uses))
                )
            db.executemany(
                "INSERT OR REPLACE INTO results (path, blob, kind, case_id, similarity, crc, raw)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            db.executemany("INSERT OR IGNORE INTO refs VALUES (?, ?, ?)", refs)
            db.executemany(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)", entries
            )
            self._dirty = True
        except StoreError:
            pass
        except sqlite3.Error as exc:
            self._guard(exc)

    # --- the commit tree ---------------------------------------------------------------
    def tree_commit(self) -> str:
        row = self._one("SELECT value FROM meta WHERE key = 'tree'")
        return str(row[0]) if row else ""

    def tree_count(self) -> int:
        row = self._one("SELECT count(*) FROM tree")
        return int(row[0]) if row else 0

    def set_tree(
        self,
        commit: str,
        entries: Iterable[tuple[str, str, str]] | None,
        changes: Iterable[tuple[str, str | None, str]] = (),
    ) -> None:
        """Replace the tree by ``entries`` (path, blob, mode), or apply ``changes`` (path,
        new blob or None for a deletion, mode) to it; either way it is now ``commit``'s."""
        try:
            db = self.db()
            if entries is not None:
                db.execute("DELETE FROM tree")
                db.executemany("INSERT INTO tree VALUES (?, ?, ?)", entries)
            for path, blob, mode in changes:
                if blob is None:
                    db.execute("DELETE FROM tree WHERE path = ?", (path,))
                else:
                    db.execute("INSERT OR REPLACE INTO tree VALUES (?, ?, ?)", (path, blob, mode))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('tree', ?)", (commit,))
            self._dirty = True
        except sqlite3.Error as exc:
            raise self._guard(exc) from exc

    def tree_entries(self) -> list[tuple[str, str, str]]:
        return [(str(p), str(b), str(m)) for p, b, m in self._all("SELECT * FROM tree")]

    def tree_entries_in(self, paths: Iterable[str]) -> list[tuple[str, str, str]]:
        wanted = sorted(set(paths))
        out: list[tuple[str, str, str]] = []
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i : i + _BATCH]
            marks = ",".join("?" * len(part))
            rows = self._all(f"SELECT * FROM tree WHERE path IN ({marks})", part)
            out.extend((str(p), str(b), str(m)) for p, b, m in rows)
        return out

    def tree_paths_in(self, paths: Iterable[str]) -> list[str]:
        return [p for p, _b, _m in self.tree_entries_in(paths)]

    def tree_missing(self, paths: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
        """Tree files (all, or those at ``paths``) without a stored result: what a sync
        must analyse."""
        sql = (
            "SELECT t.path, t.blob, t.mode FROM tree t LEFT JOIN results r"
            " ON r.path = t.path AND r.blob = t.blob WHERE r.path IS NULL"
        )
        if paths is None:
            return [(str(p), str(b), str(m)) for p, b, m in self._all(sql)]
        out: list[tuple[str, str, str]] = []
        wanted = sorted(set(paths))
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i : i + _BATCH]
            marks = ",".join("?" * len(part))
            rows = self._all(f"{sql} AND t.path IN ({marks})", part)
            out.extend((str(p), str(b), str(m)) for p, b, m in rows)
        return out

    def tree_results(self, where: str = "", params: Sequence[Any] = ()) -> Iterator[
            tuple[str, str, Any]]:  # fmt: skip
        """(path, blob, decoded result) of tree files (joined with ``results r``)."""
        sql = (
            "SELECT r.path, r.blob, r.crc, r.raw FROM tree t JOIN results r"
            f" ON r.path = t.path AND r.blob = t.blob {where}"
        )
        for path, blob, crc, raw in self._iter(sql, params):
            value = _decode(crc, raw)
            if value is None:
                raise self._guard(ValueError(f"damaged entry for {path}"))
            yield str(path), str(blob), value

    def tree_results_in(self, column: str, values: Iterable[str]) -> Iterator[tuple[str, str, Any]]:
        """Tree files whose ``column`` (case_id, similarity, path) is one of ``values``,
        decoded one at a time as :meth:`tree_results`."""
        wanted = sorted(set(values))
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i : i + _BATCH]
            marks = ",".join("?" * len(part))
            yield from self.tree_results(f"WHERE r.{column} IN ({marks})", part)

    def tree_users(self, keys: Iterable[str]) -> Iterator[tuple[str, str, Any]]:
        """Tree cases that reference any of the reference ``keys`` (see :func:`ref_key`),
        decoded one at a time: a fixture's users may be a third of the repository, and
        the hook keeps their facts, not their stored rows too. A case that references
        keys of two batches comes twice."""
        wanted = sorted(set(keys))
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i : i + _BATCH]
            marks = ",".join("?" * len(part))
            yield from self.tree_results(
                "JOIN (SELECT DISTINCT path AS p, blob AS b FROM refs"
                f" WHERE key IN ({marks})) u ON u.p = r.path AND u.b = r.blob",
                part,
            )

    def tree_result_paths(self, column: str, values: Iterable[str]) -> set[str]:
        """Paths of the tree files whose ``column`` is one of ``values``, none decoded:
        a lookup whose answers are mostly already loaded."""
        return self._paths_in(
            "SELECT r.path FROM tree t JOIN results r ON r.path = t.path AND r.blob = t.blob"
            f" WHERE r.{column} IN ({{marks}})",
            values,
        )

    def tree_user_paths(self, keys: Iterable[str]) -> set[str]:
        """Paths of the tree cases that reference any of ``keys``, none decoded."""
        return self._paths_in(
            "SELECT DISTINCT u.path FROM refs u JOIN tree t ON t.path = u.path"
            " AND t.blob = u.blob WHERE u.key IN ({marks})",
            keys,
        )

    def _paths_in(self, sql: str, values: Iterable[str]) -> set[str]:
        wanted = sorted(set(values))
        out: set[str] = set()
        for i in range(0, len(wanted), _BATCH):
            part = wanted[i : i + _BATCH]
            rows = self._all(sql.format(marks=",".join("?" * len(part))), part)
            out.update(str(row[0]) for row in rows)
        return out

    def tree_dataset_entries(self) -> Iterator[list[TreeEntry]]:
        """Every tree file under datasets/ with its entry, in batches (see
        :data:`TreeEntry`; decode the reference keys with :meth:`reference_keys`)."""
        sql = (
            "SELECT t.path, e.kind, e.case_id, e.version, e.digest, e.grouping, e.refs"
            " FROM tree t LEFT JOIN entries e ON e.path = t.path AND e.blob = t.blob"
            " WHERE t.path >= 'datasets/' AND t.path < 'datasets0'"
        )
        try:
            cursor = self.db().execute(sql)
            while rows := cursor.fetchmany(4096):
                yield rows
        except sqlite3.Error as exc:
            raise self._guard(exc) from exc

    def reference_keys(self, raw: bytes) -> tuple[str, ...]:
        """The reference keys of an entry (as :meth:`tree_dataset_entries` gives them)."""
        try:
            keys = marshal.loads(raw)
        except (EOFError, ValueError, TypeError) as exc:
            raise self._guard(exc) from exc
        if not isinstance(keys, tuple) or not all(isinstance(k, str) for k in keys):
            raise self._guard(ValueError("damaged reference keys"))
        return keys

    # --- whole runs --------------------------------------------------------------------
    def get_run(self, key: str) -> Any:
        return self._get("runs", key)

    def put_run(self, key: str, value: Any) -> None:
        """Keep the last few runs: a pre-commit run and a plain run do not evict each other."""
        try:
            db = self.db()
            raw = marshal.dumps(value)
            (now,) = db.execute("SELECT coalesce(max(at), 0) + 1 FROM runs").fetchone()
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)",
                (key, now, zlib.crc32(raw), raw),
            )
            db.execute(
                "DELETE FROM runs WHERE key NOT IN (SELECT key FROM runs ORDER BY at DESC LIMIT ?)",
                (RUNS_KEPT,),
            )
            self._dirty = True
        except StoreError:
            pass
        except sqlite3.Error as exc:
            self._guard(exc)

    # --- parsed release tags ------------------------------------------------------------
    def get_parsed_tag(self, key: str) -> Any:
        return self._get("tags", key)

    def put_parsed_tag(self, key: str, value: Any) -> None:
        try:
            raw = marshal.dumps(value)
            self.db().execute(
                "INSERT OR REPLACE INTO tags VALUES (?, ?, ?)", (key, zlib.crc32(raw), raw)
            )
            self._dirty = True
        except StoreError:
            pass
        except sqlite3.Error as exc:
            self._guard(exc)

    # --- writing -----------------------------------------------------------------------
    def save(self) -> None:
        """Commit this run's writes. Never fatal."""
        if self._db is None:
            return
        try:
            self._db.execute("COMMIT")
            self._db.close()
        except sqlite3.Error:
            self._fail()
        self._db = None

    def close(self) -> None:
        """Close the connection; writes not saved are discarded (and their lock freed)."""
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """Save what the block wrote when it ended normally, else discard it; the
        connection is closed either way."""
        if kind is None:
            self.save()
        self.close()

    # --- helpers -----------------------------------------------------------------------
    def _get(self, table: str, key: str) -> Any:
        """A decoded value of a (key, crc, raw) table; None when absent or damaged."""
        try:
            row = self._one(f"SELECT crc, raw FROM {table} WHERE key = ?", (key,))
        except StoreError:
            return None
        return None if row is None else _decode(row[0], row[1])

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            return self.db().execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise self._guard(exc) from exc

    def _iter(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """Rows one at a time: a whole tree's results are never all in memory as rows."""
        try:
            cursor = self.db().execute(sql, params)
            while True:
                rows = cursor.fetchmany(256)
                if not rows:
                    return
                yield from rows
        except sqlite3.Error as exc:
            raise self._guard(exc) from exc

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self.db().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._guard(exc) from exc


def _decode(crc: Any, raw: Any) -> Any:
    if not isinstance(raw, bytes) or zlib.crc32(raw) != crc:
        return None
    try:
        return marshal.loads(raw)
    except (EOFError, ValueError, TypeError):
        return None
