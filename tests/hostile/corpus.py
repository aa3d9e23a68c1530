"""The hostile corpus: what a pull request or a production log can put in a file.

Each entry is one file (or link) with the place it takes in a repository and the exact
findings, ``(code, line)`` on that path, it must produce there. Small files live in
``corpus/``; large ones (100,000 levels of nesting, a 10 MB line, 200,000 keys) are
generated here when a test asks for them, so the repository does not carry megabytes.
Files that parse are built from a fully valid case or fixture of the base repository with
one hostile part, so that the hostile part is the only thing reported.

Used by tests/hostile/test_hostile.py and benchmarks/hostile_bench.py.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BASE_REPO = REPO_ROOT / "tests" / "rules" / "base_repo"
CORPUS = Path(__file__).parent / "corpus"
CASES = "datasets/sample_set/cases"

# Rules owned elsewhere that some entries expect; until they are registered, the entries
# that need them are expected failures.
ID_CHARACTERS = "EC208"


@dataclass(frozen=True)
class Entry:
    name: str
    path: str  # where it goes in the repository
    expect: frozenset[tuple[str, int]]  # (code, line) findings on ``path``, exactly
    what: str  # the attack, in a few words
    content: Callable[[], bytes] | None = None
    symlink: str | None = None  # a link to this target is placed at ``path`` instead
    needs: str | None = None  # a rule code the entry relies on

    def place(self, repo: Path) -> None:
        target = repo / self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.symlink is not None:
            os.symlink(self.symlink, target)
        else:
            assert self.content is not None
            target.write_bytes(self.content())


def expect(*items: str) -> frozenset[tuple[str, int]]:
    """``expect("EC006@3", "EC010@2")``."""
    out = set()
    for item in items:
        code, _, line = item.partition("@")
        out.add((code, int(line)))
    return frozenset(out)


def static(name: str) -> Callable[[], bytes]:
    return lambda: (CORPUS / name).read_bytes()


# --- valid documents with one hostile part --------------------------------------------


def _template() -> str:
    return (BASE_REPO / CASES / "refund_eligibility_001.yaml").read_text("utf-8")


def case_id(number: int) -> str:
    return f"refund_eligibility_{number:03d}"


def valid_case(number: int, extra: str = "") -> str:
    """The base repository's case under a new ID, with its own input (so that it is no
    near-duplicate of another), and ``extra`` appended as its last lines."""
    lines = _template().replace("refund_eligibility_001", case_id(number)).split("\n")
    for i, line in enumerate(lines):
        if line.startswith("input:"):
            lines[i] = f'input: "耳机签收十天了，有质量问题，能退吗？（第 {number} 号）"'
    text = "\n".join(lines)
    return text + extra


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    for number, line in enumerate(text.split("\n"), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not found")


def case_path(number: int) -> str:
    return f"{CASES}/{case_id(number)}.yaml"


def _case_entry(
    name: str, number: int, extra: str, codes: Iterable[str], marker: str, what: str
) -> Entry:
    """A valid case with ``extra`` appended; each code is expected on the line of ``marker``."""
    text = valid_case(number, extra)
    line = line_of(text, marker)
    return Entry(
        name,
        case_path(number),
        frozenset((code, line) for code in codes),
        what,
        lambda: text.encode("utf-8"),
    )


def _rubric(fixture_id: str, weight: str, threshold: str) -> str:
    return (
        f"fixture_id: {fixture_id}\n"
        "fixture_version: v1\n"
        "kind: rubric\n"
        "description: 退款政策忠实度评分（对抗样例）。\n"
        "source: 评测团队\n"
        "desensitized: true\n"
        "data:\n"
        "  dimensions:\n"
        f"    - {{name: 政策正确性, scale: {{min: 0, max: 2}}, weight: {weight}}}\n"
        "    - {name: 表达清晰度, scale: {min: 0, max: 2}, weight: 0.4}\n"
        f"  pass_threshold: {threshold}\n"
        "  judge_instructions: 依据当前生效政策判断回答是否忠实。\n"
    )


def _state_fixture(fixture_id: str) -> str:
    return (
        (BASE_REPO / "fixtures/state/order_123.yaml")
        .read_text("utf-8")
        .replace("order_123", fixture_id)
    )


# --- generated large files -------------------------------------------------------------

DEPTH = 100_000


def deep_flow_sequence() -> bytes:
    return b"x-deep: " + b"[" * DEPTH + b"]" * DEPTH + b"\n"


def deep_flow_mapping() -> bytes:
    return b"x-deep: " + b"{a: " * DEPTH + b"1" + b"}" * DEPTH + b"\n"


def deep_block_sequence() -> bytes:
    return b"- " * DEPTH + b"x\n"


def deep_block_mapping() -> bytes:
    return b"".join(b"  " * i + b"k:\n" for i in range(200)) + b"  " * 200 + b"leaf\n"


def deep_alias_nesting() -> bytes:
    """Each anchor nests the previous one 30 levels deeper: 30 anchors, 900 levels."""
    out = [b"a0: &a0 " + b"[" * 30 + b"x" + b"]" * 30]
    for i in range(1, 30):
        out.append(f"a{i}: &a{i} ".encode() + b"[" * 30 + f"*a{i - 1}".encode() + b"]" * 30)
    return b"\n".join(out) + b"\n"


def _short_keys(count: int) -> Iterable[bytes]:
    """``count`` distinct keys of one to three characters, each starting with a letter."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    alnum = letters + "0123456789"
    made = 0
    for first in letters:
        yield first.encode()
        made += 1
    for first in letters:
        for second in alnum:
            yield (first + second).encode()
            made += 1
    for first in letters:
        for second in alnum:
            for third in alnum:
                if made == count:
                    return
                yield (first + second + third).encode()
                made += 1


MANY_KEYS = 200_000


def many_keys() -> bytes:
    """200,000 distinct short keys with empty values, under 1,000,000 bytes."""
    return b"".join(key + b":\n" for key in _short_keys(MANY_KEYS))


def ten_megabyte_line() -> bytes:
    return b"x-blob: " + b"A" * 10_000_000 + b"\n"


def long_line_under_limit() -> bytes:
    """A single 990,000-byte line: a flow list of 495,000 values."""
    return b"x-values: [" + b"1," * 494_994 + b"1]\n"


def _flood(key: str, item: bytes, count: int) -> bytes:
    return f"{key}: [".encode() + item * count + b"0]\n"


# --- the corpus --------------------------------------------------------------------------


def _entries() -> list[Entry]:
    out: list[Entry] = []
    add = out.append

    # Size, depth and expansion.
    add(
        Entry(
            "billion_laughs",
            f"{CASES}/billion_laughs.yaml",
            expect("EC006@7"),
            "alias expansion bomb, 9^9 values",
            static("billion_laughs.yaml"),
        )
    )
    add(
        Entry(
            "merge_bomb",
            f"{CASES}/merge_bomb.yaml",
            expect(*(f"EC010@{4 + 3 * i}" for i in range(14)), "EC006@43"),
            "merge keys '<<' doubling 30 times",
            static("merge_bomb.yaml"),
        )
    )
    add(
        Entry(
            "deep_flow_sequence",
            f"{CASES}/deep_flow_sequence.yaml",
            expect("EC006@1"),
            "100,000 levels of [ ]",
            deep_flow_sequence,
        )
    )
    add(
        Entry(
            "deep_flow_mapping",
            f"{CASES}/deep_flow_mapping.yaml",
            expect("EC006@1"),
            "100,000 levels of { }",
            deep_flow_mapping,
        )
    )
    add(
        Entry(
            "deep_block_sequence",
            f"{CASES}/deep_block_sequence.yaml",
            expect("EC006@1"),
            "100,000 levels of '- - - ...'",
            deep_block_sequence,
        )
    )
    add(
        Entry(
            "deep_block_mapping",
            f"{CASES}/deep_block_mapping.yaml",
            expect("EC006@65"),
            "200 levels of indented block mappings",
            deep_block_mapping,
        )
    )
    add(
        Entry(
            "deep_alias_nesting",
            f"{CASES}/deep_alias_nesting.yaml",
            expect("EC006@3"),
            "aliases nesting 30 levels each, 900 in all",
            deep_alias_nesting,
        )
    )
    add(
        Entry(
            "many_keys",
            f"{CASES}/many_keys.yaml",
            expect("EC006@100000"),
            "200,000 short keys (max_nodes)",
            many_keys,
        )
    )
    add(
        Entry(
            "ten_megabyte_line",
            f"{CASES}/ten_megabyte_line.yaml",
            expect("EC005@1"),
            "a 10 MB single line (max_file_bytes)",
            ten_megabyte_line,
        )
    )
    add(
        Entry(
            "long_line_under_limit",
            f"{CASES}/long_line_under_limit.yaml",
            expect("EC006@1"),
            "a 990 KB single line of 495,000 values",
            long_line_under_limit,
        )
    )

    # Encoding and text.
    add(
        Entry(
            "binary",
            f"{CASES}/binary.yaml",
            expect("EC004@3"),
            "binary content (a PNG)",
            static("binary.png.yaml"),
        )
    )
    add(
        Entry(
            "nul_byte",
            f"{CASES}/nul_byte.yaml",
            expect("EC004@2"),
            "a NUL byte",
            static("nul_byte.yaml"),
        )
    )
    add(
        Entry(
            "gbk",
            f"{CASES}/gbk.yaml",
            expect("EC004@1"),
            "GBK-encoded (not UTF-8)",
            static("gbk.yaml"),
        )
    )
    add(
        Entry(
            "utf16",
            case_path(101),
            expect("EC004@1"),
            "UTF-16 with a byte-order mark",
            lambda: valid_case(101).encode("utf-16"),
        )
    )
    add(
        Entry(
            "utf16_without_bom",
            case_path(102),
            expect("EC004@1"),
            "UTF-16 without a byte-order mark",
            lambda: valid_case(102).encode("utf-16-le"),
        )
    )
    add(
        Entry(
            "utf8_bom",
            case_path(103),
            expect("EC011@1"),
            "a UTF-8 byte-order mark",
            lambda: b"\xef\xbb\xbf" + valid_case(103).encode(),
        )
    )
    add(
        Entry(
            "crlf",
            case_path(104),
            expect("EC011@1"),
            "CRLF line endings",
            lambda: valid_case(104).replace("\n", "\r\n").encode(),
        )
    )
    add(
        Entry(
            "tab_indent",
            f"{CASES}/tab_indent.yaml",
            expect("EC001@3"),
            "a tab in indentation",
            static("tab_indent.yaml"),
        )
    )
    add(
        _case_entry(
            "control_character",
            105,
            "x-note: 退款\x1b[31m红字\n",
            ["EC004"],
            "x-note",
            "an ESC control character (terminal escape)",
        )
    )
    add(
        _case_entry(
            "line_separator",
            106,
            'x-note: "第一行\u2028第二行"\n',
            ["EC011"],
            "x-note",
            "a U+2028 LINE SEPARATOR inside a value",
        )
    )

    # Tags.
    add(
        _case_entry(
            "python_object_apply",
            107,
            'x-payload: !!python/object/apply:os.system ["touch evalcase_pwned"]\n',
            ["EC003"],
            "x-payload",
            "!!python/object/apply:os.system",
        )
    )
    other_tags = (
        "x-name: !!python/name:os.system ''\n"
        "x-custom: !vendor/record {id: 1}\n"
        "x-binary: !!binary aGVsbG8=\n"
        "x-set: !!set {a, b}\n"
        "x-local: !<tag:evil.example,2026:run> ls\n"
    )
    text_tags = valid_case(108, other_tags)
    add(
        Entry(
            "other_tags",
            case_path(108),
            frozenset(
                ("EC003", line_of(text_tags, k))
                for k in ("x-name", "x-custom", "x-binary", "x-set", "x-local")
            ),
            "non-standard tags (python/name, local, binary, set, verbatim)",
            lambda: text_tags.encode(),
        )
    )

    # Keys and numbers.
    keys = "x-keys:\n  ? [a, b]\n  : complex\n  404: integer\n  ~: null\n  true: boolean\n"
    text_keys = valid_case(109, keys)
    first = line_of(text_keys, "? [a, b]")
    add(
        Entry(
            "non_string_keys",
            case_path(109),
            expect(
                f"EC008@{first}", f"EC008@{first + 2}", f"EC008@{first + 3}", f"EC008@{first + 4}"
            ),
            "complex, integer, null and boolean keys",
            lambda: text_keys.encode(),
        )
    )
    add(
        _case_entry(
            "duplicate_key", 110, "title: 第二个标题\n", ["EC002"], "第二个标题", "a duplicate key"
        )
    )
    rubric = _rubric("hostile_rubric_nan", ".nan", ".inf")
    add(
        Entry(
            "nan_and_infinity",
            "fixtures/rubric/hostile_rubric_nan.yaml",
            expect("EC009@9", "EC103@9", "EC009@11", "EC103@11"),
            "NaN and infinity where numbers are expected",
            lambda: rubric.encode(),
        )
    )
    add(
        _case_entry(
            "huge_integer",
            111,
            "x-count: " + "9" * 50_000 + "\n",
            ["EC009"],
            "x-count",
            "an integer with 50,000 digits",
        )
    )
    add(
        _case_entry(
            "huge_hex_integer",
            112,
            "x-count: 0x" + "f" * 4_000 + "\n",
            ["EC009"],
            "x-count",
            "a hex integer of 4,800 decimal digits",
        )
    )

    # Paths and links.
    escape = valid_case(113).replace(
        "rubric: refund_policy_faithfulness_v1", "rubric: ../../etc/passwd"
    )
    add(
        Entry(
            "fixture_reference_escape",
            case_path(113),
            expect(f"EC015@{line_of(escape, 'rubric:')}", f"EC301@{line_of(escape, 'rubric:')}"),
            "a fixture reference ../../etc/passwd",
            lambda: escape.encode(),
        )
    )
    absolute = valid_case(114, "x-source-file: /etc/shadow\n")
    add(
        Entry(
            "absolute_path",
            case_path(114),
            expect(f"EC015@{line_of(absolute, 'x-source')}"),
            "an absolute path value",
            lambda: absolute.encode(),
        )
    )
    add(
        Entry(
            "symlink_outside",
            "fixtures/state/passwd.yaml",
            expect("EC012@1"),
            "a link to /etc/passwd",
            symlink="/etc/passwd",
        )
    )
    add(
        Entry(
            "symlink_inside",
            "fixtures/state/order_124.yaml",
            expect("EC012@1"),
            "a link to another fixture of the repository",
            symlink="order_123.yaml",
        )
    )
    add(
        Entry(
            "symlink_loop",
            "fixtures/state/loop.yaml",
            expect("EC012@1"),
            "a link to itself",
            symlink="loop.yaml",
        )
    )
    add(
        Entry(
            "symlink_directory",
            "datasets/linked_set",
            expect("EC012@1"),
            "a linked directory under datasets/ pointing outside",
            symlink="/etc",
        )
    )
    add(
        Entry(
            "directory_named_yaml",
            f"{case_path(115)}/payload.yaml",
            expect("EC013@1"),
            "a directory named like a case file",
            lambda: valid_case(115).encode(),
        )
    )

    # Identifiers (EC208 is written elsewhere).
    ids = [
        ("id_path_separator", 116, "refund/eligibility_116", "a path separator in an ID"),
        ("id_control_character", 117, "refund_eligibility_117\\a", "a BEL character in an ID"),
        ("id_confusable", 118, "rеfund_eligibility_118", "a Cyrillic 'е' in an ID"),
        ("id_zero_width", 119, "refund_eligibility_119\\u200b", "a zero-width space in an ID"),
    ]
    for name, number, bad_id, what in ids:
        text = valid_case(number).replace(f"case_id: {case_id(number)}", f'case_id: "{bad_id}"')
        line = line_of(text, "case_id:")
        add(
            Entry(
                name,
                case_path(number),
                expect(f"EC208@{line}", f"EC204@{line}"),
                what,
                (lambda t: lambda: t.encode())(text),
                needs=ID_CHARACTERS,
            )
        )

    # Shape and place.
    add(
        Entry(
            "empty", f"{CASES}/empty.yaml", expect("EC007@1"), "an empty file", static("empty.yaml")
        )
    )
    add(
        Entry(
            "comments_only",
            f"{CASES}/comments_only.yaml",
            expect("EC007@1"),
            "only comments",
            static("comments_only.yaml"),
        )
    )
    add(
        Entry(
            "top_level_list",
            f"{CASES}/top_level_list.yaml",
            expect("EC007@1"),
            "a list at the top level",
            static("top_level_list.yaml"),
        )
    )
    add(
        Entry(
            "top_level_scalar",
            f"{CASES}/top_level_scalar.yaml",
            expect("EC007@1"),
            "a scalar at the top level",
            static("top_level_scalar.yaml"),
        )
    )
    two = valid_case(125) + "---\n" + valid_case(126)
    add(
        Entry(
            "two_documents",
            case_path(125),
            expect(f"EC007@{line_of(two, '---')}"),
            "two cases in one file (two YAML documents)",
            lambda: two.encode(),
        )
    )
    add(
        Entry(
            "fixture_among_cases",
            f"{CASES}/order_125.yaml",
            expect("EC014@1"),
            "a valid fixture placed among cases",
            lambda: _state_fixture("order_125").encode(),
        )
    )
    add(
        Entry(
            "case_among_fixtures",
            f"fixtures/state/{case_id(120)}.yaml",
            expect("EC014@1"),
            "a valid case placed among fixtures",
            lambda: valid_case(120).encode(),
        )
    )
    add(
        Entry(
            "unexpected_place",
            "datasets/sample_set/notes.yaml",
            expect("EC013@1"),
            "a YAML file outside cases/",
            lambda: b"note: hello\n",
        )
    )

    # Floods: one mistake repeated 150,000 times is reported a bounded number of times.
    dup_text = valid_case(127, "x-dup: 1\n" * 99_000)
    first_dup = line_of(dup_text, "x-dup")
    add(
        Entry(
            "duplicate_key_flood",
            case_path(127),
            frozenset(("EC002", first_dup + n) for n in range(1, 101)),
            "99,000 duplicate keys",
            lambda: dup_text.encode(),
        )
    )
    nan_text = valid_case(121) + _flood("x-values", b".nan,", 150_000).decode()
    add(
        Entry(
            "nan_flood",
            case_path(121),
            expect(f"EC009@{line_of(nan_text, 'x-values')}"),
            "150,000 NaNs",
            lambda: nan_text.encode(),
        )
    )
    type_text = valid_case(122).replace("ability_tags: [", "ability_tags: [" + "1, " * 150_000)
    add(
        Entry(
            "schema_error_flood",
            case_path(122),
            expect(f"EC103@{line_of(type_text, 'ability_tags')}"),
            "150,000 values of the wrong type",
            lambda: type_text.encode(),
        )
    )
    contains = valid_case(123).replace(
        "ability_tags: [", "case_types: [" + "llm, " * 90_000 + "llm]\nability_tags: ["
    )
    add(
        Entry(
            "schema_work_bomb",
            case_path(123),
            expect("EC006@1", f"EC105@{line_of(contains, 'case_types')}"),
            "90,000 case types: every contains condition scans them all",
            lambda: contains.encode(),
        )
    )
    paths_text = valid_case(124) + _flood("x-paths", b"../a,", 150_000).decode()
    add(
        Entry(
            "path_escape_flood",
            case_path(124),
            expect(f"EC015@{line_of(paths_text, 'x-paths')}"),
            "150,000 '../' paths",
            lambda: paths_text.encode(),
        )
    )
    return out


ENTRIES: list[Entry] = _entries()


# The ordinary mistake the whole-tree run must still report beside the hostile files.
def ordinary_error() -> tuple[str, bytes, frozenset[tuple[str, int]]]:
    """(path, content, expected findings) of a case with an unknown risk level."""
    text = valid_case(200).replace("risk_level: P2", "risk_level: P7")
    return case_path(200), text.encode(), frozenset({("EC104", line_of(text, "risk_level"))})


def build_repo(dest: Path, entries: Iterable[Entry]) -> Path:
    """A copy of the base repository with the entries placed in it."""
    shutil.copytree(BASE_REPO, dest)
    for entry in entries:
        entry.place(dest)
    return dest


# --- measuring --------------------------------------------------------------------------

# The peak resident memory of the process itself. ru_maxrss would not do: on Linux a child
# inherits the high-water mark of the parent it was forked from (here, the test process
# that generated megabytes of corpus), while VmHWM counts only this program's memory.
_PEAK = """
def _peak_mb():
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

# Lints one repository per request line, each in a child forked from this warmed-up
# process (imports and compiled schemas loaded once per test worker, not once per file:
# about 0.3 s of CPU a file). The child resets its peak-memory mark first
# (/proc/self/clear_refs, "5"); the peak it reports is what linting added to its memory at
# the fork, on top of the warmed-up process's own peak (its start, imports, warm-up): at
# least a fresh process's peak for the same work (measured over the corpus: 4.7-7.5 MB
# above it, never below).
# Its stderr goes to a file of its own, read back into the answer.
_SERVER = (
    _PEAK
    + """
import json, os, sys, tempfile, time
from pathlib import Path
from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.loader import load
from evalcase.schemas import fast_validator_for, validator_for

# Warm up (imports, compiled schemas) so that the time measured is the linting alone.
load("warm.yaml", b"a: 1\\n")
for kind in ("case", "fixture", "dataset"):
    validator_for(kind)
    fast_validator_for(kind)
import gc
gc.collect()
started_mb = _peak_mb()  # this process's peak so far: its start, imports and warm-up
out = sys.stdout
for request in sys.stdin:
    repo = request.rstrip("\\n")
    err, answers = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    out.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(err.fileno(), 2)
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
            at_fork_mb = _peak_mb()
            config = load_config(Path(repo))
            start = time.perf_counter()
            result = lint_repository(config, use_cache=False, jobs=1)
            seconds = time.perf_counter() - start
            findings = [
                [f.path, f.code, f.line, f.column, str(f.severity)] for f in result.findings
            ]
            # What linting added, on top of the peak a fresh process reached before linting.
            peak_mb = started_mb + _peak_mb() - at_fork_mb
            answer = {"findings": findings, "seconds": seconds, "peak_mb": peak_mb}
            with os.fdopen(os.dup(answers.fileno()), "w") as written:
                written.write(json.dumps(answer))
            code = 0
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    err.seek(0)
    answers.seek(0)
    stderr = err.read().decode("utf-8", "replace")
    answer = answers.read().decode("utf-8")
    err.close()
    answers.close()
    exit_code = os.waitstatus_to_exitcode(status)
    out.write(json.dumps({"exit": exit_code, "stderr": stderr, "answer": answer}) + "\\n")
    out.flush()
"""
)


class _LintServer:
    """One warmed-up lint process per test process (:data:`_SERVER`): one request line,
    one answer line, read from its raw descriptor so the timeout covers all of it."""

    proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes]) -> None:
        """At the test process's end: its input closed, the server ends and is waited for."""
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @classmethod
    def lint(cls, repo: Path, timeout: float) -> tuple[int, str, str]:
        """(the child's exit code, its answer or "", its stderr)."""
        import select

        if cls.proc is None or cls.proc.poll() is not None:
            cls.proc = subprocess.Popen(
                [sys.executable, "-c", _SERVER],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env(),
            )  # fmt: skip
            atexit.register(cls._stop, cls.proc)
        proc = cls.proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"{repo}\n".encode())
        proc.stdin.flush()
        fd, got = proc.stdout.fileno(), b""
        deadline = time.monotonic() + timeout
        while not got.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                proc.kill()
                proc.wait()
                cls.proc = None
                raise AssertionError(f"lint did not finish within {timeout} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                cls.proc = None
                raise AssertionError(f"the lint server ended (exit {proc.wait()})")
            got += chunk
        done = json.loads(got)
        return int(done["exit"]), str(done["answer"]), str(done["stderr"])


def lint_in_subprocess(repo: Path, timeout: float = 120) -> Run:
    """Lint ``repo`` in a process of its own (forked from a warmed-up one, see
    :data:`_SERVER`): findings, seconds spent linting, peak memory."""
    code, answer, stderr = _LintServer.lint(repo, timeout)
    if code != 0 or not answer:
        raise AssertionError(f"lint raised (exit {code}):\n{stderr[-4000:]}")
    data = json.loads(answer)
    findings = [tuple(f) for f in data["findings"]]
    return Run(findings, data["seconds"], data["peak_mb"], stderr)


# `python -m evalcase ARGS`, writing its peak memory to the file named by EVALCASE_PEAK_FILE
# when it exits (normally or by sys.exit).
_CLI = (
    _PEAK
    + """
import os, runpy, sys
sys.argv = ["evalcase", *sys.argv[1:]]
try:
    runpy.run_module("evalcase", run_name="__main__", alter_sys=True)
finally:
    with open(os.environ["EVALCASE_PEAK_FILE"], "w") as out:
        out.write(str(_peak_mb()))
"""
)


@dataclass(frozen=True)
class Run:
    findings: list[tuple[str, str, int, int, str]]  # path, code, line, column, severity
    seconds: float  # linting alone, in the child process
    peak_mb: float  # the child's peak resident memory (interpreter and imports included)
    stderr: str

    def on(self, path: str) -> set[tuple[str, int]]:
        return {(code, line) for p, code, line, _, _ in self.findings if p == path}


def env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(REPO_ROOT / "tools"), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }


@dataclass(frozen=True)
class CliRun:
    exit_code: int
    stdout: str
    stderr: str
    seconds: float  # the whole process: interpreter start, imports, linting, report
    peak_mb: float  # the process's peak resident memory


def run_cli(repo: Path, *args: str, timeout: float = 120) -> CliRun:
    """``python -m evalcase ARGS`` in ``repo`` as a fresh process, with its wall time and
    peak memory; killed after ``timeout`` seconds."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _CLI, *args],
            cwd=repo,
            env={**env(), "EVALCASE_PEAK_FILE": str(peak_file)},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        seconds = time.perf_counter() - start
        peak = float(peak_file.read_text()) if peak_file.exists() else float("nan")
    return CliRun(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        seconds,
        peak,
    )
