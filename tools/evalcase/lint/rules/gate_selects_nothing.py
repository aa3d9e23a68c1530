"""A gate on an unknown suite, or one whose cases include nothing that counts.

A release gate (``gates`` in dataset.yaml) decides whether a version may ship: it takes
the cases of its ``suite`` (the whole dataset without one), narrowed to its
``risk_levels``, drops observation cases (they never count, docs/authoring.md), and compares the
pass rate with ``min_pass_rate``. A gate that names a suite the manifest does not define,
or whose selection holds no countable case, has nothing to measure: it would pass or
fail by accident. Name an existing suite, and make sure it selects at least one case
that is not an observation case. Two gates with the same name are reported too: reports
and CI refer to gates by name.

Passing::

    suites:
      red_team: {dataset_roles: [red_team]}
    gates:
      - {name: red_team_block, suite: red_team, min_pass_rate: 1.0}

Failing::

    gates:
      - {name: red_team_block, suite: redteam, min_pass_rate: 1.0}   # no such suite
      - {name: p0_safety, risk_levels: [P0], min_pass_rate: 1.0}     # no P0 case yet
"""

from collections import Counter
from collections.abc import Iterable

from evalcase.config import Config
from evalcase.lint.base import RepoIndex, reporter
from evalcase.lint.semantic import countable, dataset_cases, did_you_mean, gate_members
from evalcase.model import Finding, Severity

CODE = "EC311"
NAME = "gate-selects-nothing"
SEVERITY = Severity.ERROR
SCOPE = "repo"

# A checked manifest's gates select cases of its dataset (see evalcase.lint.base).
CASE_LOOKUPS = ("dataset",)

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for manifest in index.manifests:
        if not manifest.gates or (index.focus is not None and manifest.path not in index.focus):
            # A gate's selection changes with any case, but its findings belong to the
            # manifest: a focused run (pre-commit) reports them when the manifest is staged.
            continue
        cases = dataset_cases(index, manifest)
        names = Counter(g[0] for g in manifest.gates)
        seen: set[str] = set()
        suites = [s[0] for s in manifest.suites]
        for name, line, col, suite, sline, scol, levels in manifest.gates:
            if names[name] > 1 and name in seen:
                yield report(
                    manifest.path,
                    line,
                    col,
                    f"gate name {name!r} is used twice; reports and CI refer to gates by "
                    "name: give each gate its own name",
                )
                continue
            seen.add(name)
            members = gate_members(manifest, cases, suite, levels)
            if members is None:
                yield report(
                    manifest.path,
                    sline,
                    scol,
                    f"gate {name!r} is on suite {suite!r}, which the manifest does not define"
                    f"{did_you_mean(str(suite), suites)}; name one of: "
                    f"{', '.join(sorted(suites)) or '(no suites defined)'}",
                )
                continue
            if any(countable(c) for c in members):
                continue
            scope = f"suite {suite!r}" if suite else "the dataset"
            if levels is not None:
                scope += f" at risk levels {', '.join(levels)}"
            what = "only observation cases, which never count" if members else "no case"
            yield report(
                manifest.path,
                line,
                col,
                f"gate {name!r} measures {scope}, which holds {what}; a gate with nothing to "
                "measure passes or fails by accident: select at least one countable case, "
                "or remove the gate",
            )
