"""Semantic rules (EC2xx-EC4xx): what the samples cannot show on their own.

Plugins for graders and rule checks, the date dependence of usage rights, hostile tool
parameter schemas, the identifier helpers, and the cost of the repository-wide rules.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcase import naming, plugins
from evalcase.config import DEFAULT_FORBIDDEN_TOKENS, Config, load_config
from evalcase.files import WorkTree
from evalcase.grade import names
from evalcase.index.facts import CaseFacts, case_facts, fixture_facts, manifest_facts
from evalcase.index.repo import RepoIndex
from evalcase.lint.api import lint_repository
from evalcase.lint.linter import Linter
from evalcase.lint.rules import RULES, unknown_evaluator, usage_rights
from evalcase.loader import load
from tests.helpers import POLL, REPO_ROOT, run_cli

CASE = "datasets/sample_set/cases/refund_eligibility_001.yaml"


def findings(repo: Path, *, cache: bool = False) -> list[tuple[str, str, int]]:
    result = lint_repository(load_config(repo), use_cache=cache, jobs=1)
    return [(f.path, f.code, f.line) for f in result.findings]


# ------------------------------------------------------------------------- plugins


@pytest.fixture
def fresh_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Clear the plugin caches before and after a test that fakes entry points."""

    def clear() -> None:
        for fn in (
            plugins._declared_groups,
            plugins._plugins,
            names.known_graders,
            names.known_rule_checks,
            plugins.plugins_digest,
        ):
            fn.cache_clear()

    clear()
    yield
    monkeypatch.undo()
    clear()


def test_plugins_are_known_by_name_and_change_the_cache_namespace(
    base_repo: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None
) -> None:
    config = load_config(base_repo)
    before = Linter(config, WorkTree(base_repo, config.max_file_bytes)).namespace
    plugin = EntryPoint("invoice_total", "acme_eval.graders:InvoiceTotal", plugins.GRADER_GROUP)

    def fake(group: str) -> list[EntryPoint]:
        return [plugin] if group == plugins.GRADER_GROUP else []

    monkeypatch.setattr(plugins, "entry_points", fake)
    plugins._plugins.cache_clear()
    names.known_graders.cache_clear()
    plugins.plugins_digest.cache_clear()
    assert "invoice_total" in names.known_graders()
    assert "invoice_total" not in names.known_rule_checks()
    after = Linter(config, WorkTree(base_repo, config.max_file_bytes)).namespace
    assert after != before
    with pytest.raises(ModuleNotFoundError):
        plugins.load_plugin(plugins.GRADER_GROUP, "invoice_total")  # imported only on demand


@pytest.mark.slow
def test_an_installed_plugin_makes_its_grader_known_to_lint(
    base_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    dist = site / "acme_eval-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-eval\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[evalcase.graders]\ninvoice_total = acme_eval.graders:InvoiceTotal\n"
    )
    case = base_repo / CASE
    case.write_text(
        case.read_text("utf-8").replace(
            "  graders: [{type: trace_rule}]\n",
            "  graders:\n    - {type: invoice_total}\n    - {type: trace_rule}\n",
        ),
        "utf-8",
    )
    without = run_cli("lint", "--no-cache", "--format", "json", cwd=base_repo)
    assert without.returncode == 1 and '"EC307"' in without.stdout
    monkeypatch.setenv("PYTHONPATH", str(site))
    with_plugin = run_cli("lint", "--no-cache", "--format", "json", cwd=base_repo)
    assert with_plugin.returncode == 0, with_plugin.stdout


def test_the_documentation_lists_every_built_in_evaluator() -> None:
    doc = " ".join((unknown_evaluator.__doc__ or "").split())
    for name in (*names.GRADERS, *names.RULE_CHECKS):
        assert name in doc, name


# ------------------------------------------------------------------- usage rights


def with_retention(repo: Path, until: str) -> None:
    case = repo / CASE
    case.write_text(
        case.read_text("utf-8").replace(
            "  usage_rights_status: approved_for_evaluation\n",
            "  usage_rights_status:\n    status: approved_for_evaluation\n"
            f'    retention_until: "{until}"\n',
        ),
        "utf-8",
    )


def test_retention_is_judged_against_today_and_the_run_cache_follows_the_date(
    base_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_retention(base_repo, "2026-06-30")
    monkeypatch.setattr(usage_rights, "today", lambda: "2026-06-30")
    assert findings(base_repo, cache=True) == []
    monkeypatch.setattr(usage_rights, "today", lambda: "2026-07-01")
    # Same files, a later day: the whole-run cache must not answer for yesterday.
    assert findings(base_repo, cache=True) == [(CASE, "EC405", 29)]


# ------------------------------------------------------------ tool parameter schemas


def use_tool(repo: Path, parameters: str) -> str:
    tool = "fixtures/tool/odd_tool.yaml"
    (repo / tool).write_text(
        "fixture_id: odd_tool\nfixture_version: v1\nkind: tool\ndescription: x\nsource: x\n"
        "desensitized: true\ndata:\n  name: odd_tool\n  side_effect: false\n  parameters:\n"
        + parameters,
        "utf-8",
    )
    case = repo / CASE
    text = case.read_text("utf-8").replace("input:", "case_types: [tool]\ninput:")
    text = text.replace(
        "expected_behavior:",
        "available_tools: [odd_tool]\ntool_schema: {odd_tool: v1}\n"
        "expected_tool_sequence: [odd_tool]\nexpected_args:\n  odd_tool: {q: 1}\n"
        "expected_behavior:",
    )
    case.write_text(text, "utf-8")
    return tool


def test_a_broken_parameter_schema_is_reported_on_the_tool_once(base_repo: Path) -> None:
    tool = use_tool(base_repo, "    type: object\n    properties:\n      q: {type: 12}\n")
    found = findings(base_repo)
    # EC418 on the keyword that is wrong (line 13: q's type), nothing on the case
    assert [f for f in found if f[0] == tool and f[1] in ("EC304", "EC418")] == [
        (tool, "EC418", 13)
    ]
    assert [f for f in found if f[0] == CASE] == []


def test_a_remote_reference_in_a_parameter_schema_is_never_fetched(base_repo: Path) -> None:
    """A real HTTP server on 127.0.0.1 serves the referenced schema; it must never be
    asked for it (a fetch would let a pull request make lint reach the network)."""
    import http.server
    import threading

    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        tool = use_tool(
            base_repo,
            "    type: object\n    properties:\n"
            f"      q: {{$ref: 'http://127.0.0.1:{port}/never-fetched.json'}}\n",
        )
        found = findings(base_repo)
    finally:
        server.shutdown()
        server.server_close()
    assert requests == []
    assert (tool, "EC304", 11) in found


# --------------------------------------------------------------------- identifiers

_ID_WORD = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)


@pytest.mark.slow
@given(st.lists(_ID_WORD, min_size=2, max_size=5), st.integers(0, 99999))
def test_generated_well_formed_ids_pass(words: list[str], number: int) -> None:
    case_id = "_".join(words) + f"_{number:03d}"
    assert naming.format_problem(case_id) is None
    assert naming.bad_characters(case_id) == []


@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30))
def test_every_malformed_id_is_explained(text: str) -> None:
    problem = naming.format_problem(text)
    assert (problem is None) == bool(naming.CASE_ID.match(text))
    assert problem != "it does not match the pattern"  # always a specific reason


@pytest.mark.parametrize(
    ("case_id", "words"),
    [
        ("refund_rag_member_points_001", []),
        ("rag_refund_old_policy_015", []),
        ("refund_rag_gpt4o_points_001", ["gpt4o"]),
        ("refund_rag_qwen25_points_001", ["qwen25"]),
        ("refund-rag-gpt-points-001", ["gpt"]),
        ("refund_rag_points_v3_001", ["v3"]),
        ("refund_rag_2026_07_points_001", ["2026_07"]),
        ("refund_rag_2026_07_08_points_001", ["2026_07_08"]),
        ("refund_rule_over_2000_001", []),
        ("refund_rule_over_2000_yuan_001", []),
        ("refund_rag_points_run3_001", ["run3"]),
        ("refund_rag_points_run_3_001", ["run_3"]),
        ("refund_rag_promptv2_points_001", ["promptv2"]),
        ("refund_rag_prompt2_points_001", ["prompt2"]),
        ("refund_rag_qwen72b_points_001", ["qwen72b"]),
        ("refund_rag_points_7b_001", ["7b"]),
        ("refund_rag_abtest_points_001", ["abtest"]),
        ("refund_rag_points_variant_a_001", ["variant_a"]),
        ("refund_export_points_001", []),
        ("refund_rag_points_202607_001", ["202607"]),
        ("refund_rag_points_20260708", ["20260708"]),
        ("refund_rag_points_2026", []),
        ("refund_rag_points_202613_001", []),
        ("refund_rag_o4mini_points_001", ["o4mini"]),
        ("refund_rag_gpt4turbo_points_001", ["gpt4turbo"]),
        ("refund_rag_geminiflash_points_001", ["geminiflash"]),
        ("refund_rag_qwen2p5max_points_001", ["qwen2p5max"]),
        # ordinary business nouns: a fitness test, a draft email, a final exam
        ("workout_plan_fitness_test_001", []),
        ("email_reply_draft_review_001", []),
        ("course_final_exam_001", []),
        ("order_latest_status_001", []),
        ("marketing_copy_rewrite_001", []),
        ("refund_policy_export_pro_001", []),
    ],
)
def test_run_words(case_id: str, words: list[str]) -> None:
    found = [w for w, _ in naming.run_words(case_id, DEFAULT_FORBIDDEN_TOKENS)]
    assert found == words


def test_characters_are_named() -> None:
    assert naming.character_problems("rеfund") == (
        "U+0435 CYRILLIC SMALL LETTER IE (looks like 'e') at position 2"
    )
    assert "U+200B ZERO WIDTH SPACE at position 6" in (
        naming.character_problems("order\u200b") or ""
    )
    assert "U+0007 <control character>" in (naming.character_problems("a\x07") or "")
    assert naming.ascii_form("rеfund\u200b_001") == "refund_001"


# ------------------------------------------------------------------------- scale


def synthetic_index(n: int) -> RepoIndex:
    """``n`` cases made from the example cases (new IDs, paths and similarity keys)."""
    index = RepoIndex()
    templates = []
    for path in sorted(REPO_ROOT.glob("datasets/*/cases/*.yaml")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        templates.append(case_facts(load(rel, path.read_bytes()), rel.split("/")[1]))
    for path in sorted(REPO_ROOT.glob("fixtures/*/*.yaml")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        index.add(fixture_facts(load(rel, path.read_bytes()), rel.split("/")[1]))
    for path in sorted(REPO_ROOT.glob("datasets/*/dataset.yaml")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        index.add(manifest_facts(load(rel, path.read_bytes()), rel.split("/")[1]))
    for i in range(n):
        facts: CaseFacts = templates[i % len(templates)]
        assert facts.case_id is not None and facts.similarity is not None
        case_id = f"{facts.case_id[0]}_{i:05d}"
        index.add(
            replace(
                facts,
                path=facts.path.replace(str(facts.case_id[0]), case_id),
                case_id=(case_id, *facts.case_id[1:]),
                similarity=(f"{facts.similarity[0]}{i}", *facts.similarity[1:]),
                # Another input: another case's content, not a copy (EC417).
                field_digest_text=json.dumps({**facts.field_digests, "input": f"input-{i}"}),
                content_digest="",
            )
        )
    return index


@pytest.mark.slow
def test_repo_rules_find_nothing_in_a_consistent_repository_of_ten_thousand_cases(
    tmp_path: Path,
) -> None:
    """Cross-file rules at scale: no false positives among 10,000 consistent cases.
    (Their speed is measured by benchmarks/lint_bench.py, not here.) The root is a folder
    of its own: this repository's audit facts (in its git directory, from any audit run
    here) are not the synthetic cases'."""
    index = synthetic_index(10_000)
    config = Config(root=tmp_path)
    repo_rules = [r for r in RULES.values() if r.scope == "repo" and r.code[2] in "234"]
    assert repo_rules
    for rule in repo_rules:
        assert list(rule.module.check(index, config)) == [], rule.code


def test_the_example_repository_satisfies_every_semantic_rule(example_repo: Path) -> None:
    shutil.rmtree(example_repo / ".evalcase_cache", ignore_errors=True)
    assert findings(example_repo) == []


# ----------------------------------------------------------------- robustness

_KEYS = [
    "case_id", "dataset_id", "dataset_version", "risk_level", "source", "input", "context",
    "environment", "environment_requirements", "available_tools", "tool_schema",
    "expected_tool_sequence", "expected_args", "side_effect_policy", "gold_evidence",
    "negative_behavior", "expected_behavior", "evaluator_config", "metadata", "rubric",
    "fixture_id", "fixture_version", "kind", "desensitized", "data", "owner", "tools",
    "review_records", "review_result", "approved_for", "dataset_role", "review_status",
    "usage_rights_status", "status", "allowed_uses", "retention_until", "rule_checks",
    "graders", "type", "tool", "doc_id", "passage_id", "fixtures", "name", "parameters",
    "side_effect", "documents", "passages", "effective_date", "corpus_version",
]  # fmt: skip
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", " ", "v2", "P0", "x"]),
    st.sampled_from(["golden", "observation", "approved", "tool", "corpus", "2020-01-01"]),
    st.text(max_size=5),
)  # fmt: skip
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)
    ),
    max_leaves=20,
)


_PATHS = st.sampled_from(
    [
        "datasets/sample_set/cases/x_y_001.yaml",
        "fixtures/tool/x.yaml",
        "fixtures/corpus/x.yaml",
        "datasets/sample_set/dataset.yaml",
    ]
)


# No deadline or too_slow health check: the suite shares two cores with other work, and a
# draw or an example that is slow under load is no defect of the rules.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=12), _PATHS)
def test_semantic_rules_never_crash_on_odd_data(data: dict[str, object], path: str) -> None:
    from evalcase.files import SourceFile, classify
    from evalcase.lint.base import FileContext
    from evalcase.loader import Document
    from evalcase.model import FileKind

    config = Config(root=REPO_ROOT)
    doc = Document(path, "", data)
    kind, group = classify(path)
    ctx = FileContext(SourceFile(path, kind, group), config)
    for rule in RULES.values():
        if rule.scope == "file" and rule.code[2] in "234":
            list(rule.module.check(doc, ctx))
    index = RepoIndex()
    make = {FileKind.CASE: case_facts, FileKind.FIXTURE: fixture_facts}.get(kind, manifest_facts)
    facts = make(doc, group)
    index.add(facts)
    index.add(facts)  # and a duplicate of it
    for rule in RULES.values():
        if rule.scope == "repo" and rule.code[2] in "234":
            list(rule.module.check(index, config))


def test_forbidden_tokens_extend_and_ignore(tmp_path: Path) -> None:
    from evalcase.config import load_config

    (tmp_path / "evalcase.toml").write_text(
        '[naming]\nextend_forbidden_tokens = ["acme"]\nignore_forbidden_tokens = ["phi"]\n',
        "utf-8",
    )
    tokens = load_config(tmp_path).forbidden_tokens
    assert [w for w, _ in naming.run_words("refund_acme2_points_001", tokens)] == ["acme2"]
    assert naming.run_words("insurance_phi_claims_001", tokens) == []
    assert naming.run_words("insurance_phi_claims_001", DEFAULT_FORBIDDEN_TOKENS) != []
    assert [w for w, _ in naming.run_words("refund_gpt4o_points_001", tokens)] == ["gpt4o"]


def _lint_case(base_repo: Path, old: str, new: str) -> list[tuple[str, int, str]]:
    from evalcase.config import load_config
    from evalcase.lint.api import lint_repository

    case = base_repo / "datasets" / "sample_set" / "cases" / "refund_tool_submit_001.yaml"
    text = case.read_text("utf-8")
    assert old in text
    case.write_text(text.replace(old, new, 1), "utf-8")
    result = lint_repository(load_config(base_repo), use_cache=False, jobs=1)
    return [(f.code, f.line, f.message) for f in result.findings if f.path.endswith(case.name)]


def test_expected_tool_from_the_design_document_gets_the_field_to_write(base_repo: Path) -> None:
    found = _lint_case(
        base_repo, "expected_tool_sequence: [order_lookup, refund_submit]",
        "expected_tool: [order_lookup, refund_submit]",
    )  # fmt: skip
    (message,) = [m for code, _, m in found if code == "EC102"]
    assert "expected_calls: {calls: [{tool: order_lookup}, {tool: refund_submit}]" in message
    assert "expected_tool_sequence" not in message  # never the older form


def test_ec318_names_a_renamed_grader_as_the_cause(base_repo: Path) -> None:
    found = _lint_case(
        base_repo, "  graders: [{type: trace_rule}]",
        "  graders: [{type: tool_args}, {type: llm_rubric}, {type: trace_rule}]",
    )  # fmt: skip
    (message,) = [m for code, _, m in found if code == "EC318"]
    assert "'tool_args' was renamed to 'tool_calls'" in message
    assert "only the LLM judge" not in message
