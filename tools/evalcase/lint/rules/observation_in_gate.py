"""An observation case that a gate's suite selects by case ID or tag.

Observation cases never count in pass rates: their expectation is not
settled. Gates drop them, whatever selects them; a suite that a gate uses and that
names an observation case in ``case_ids``, or selects it by one of its ``tags``, says the
opposite: the author meant the case to count, and the gate silently measures less than
the manifest says. Settle the case (drop ``observation``, have it reviewed), or take it
out of the gated suite (remove its ID, or its tag). The finding is on the manifest line
that selects the case (its ID in ``case_ids``, or the tag), with the case as the related
place.

Passing::

    # dataset.yaml
    suites: {smoke: {tags: [smoke]}}
    gates: [{name: smoke_all_pass, suite: smoke, min_pass_rate: 1.0}]
    # the observation case
    metadata: {dataset_role: observation, tags: [exploration]}

Failing::

    metadata: {dataset_role: observation, tags: [smoke]}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.digest import case_id_of
from evalcase.lint.base import RepoIndex, reporter
from evalcase.lint.semantic import countable, in_suite
from evalcase.model import Finding, Severity

CODE = "EC416"
NAME = "observation-in-gate"
SEVERITY = Severity.ERROR
SCOPE = "repo"

# This rule reads the checked cases and their manifests (see evalcase.lint.base).
CASE_LOOKUPS = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        if countable(case):
            continue
        manifest = index.manifests_by_dir.get(case.dataset_dir)
        if manifest is None or not manifest.gates:
            continue
        gated = {g[3]: g[0] for g in manifest.gates if g[3] is not None}
        for name, _, _, selectors in manifest.suites:
            if name not in gated or not in_suite(case, selectors):
                continue
            how = []
            places: list[tuple[int, int]] = []
            ids = [v for v in selectors.get("case_ids", ()) if v[0] == case_id_of(case)]
            if ids:
                how.append("its case ID")
                places.append((ids[0][1], ids[0][2]))
            tags = [v for v in selectors.get("tags", ()) if v[0] in set(case.tags)]
            if tags:
                how.append(f"tag {', '.join(sorted({v[0] for v in tags}))}")
                places.append((tags[0][1], tags[0][2]))
            if not how:
                continue  # selected by role or risk level only: the gate drops it, as it should
            # On the manifest line that selects it: that is what puts it into the gate.
            line, col = places[0]
            case_line, case_col = case.roles_at or (1, 1)
            yield report(
                manifest.path,
                line,
                col,
                f"suite {name!r} selects the observation case {case_id_of(case)} "
                f"({case.path}) by {' and '.join(how)}, and gate {gated[name]!r} uses the "
                "suite; observation cases never count in pass rates: settle the case and "
                "drop observation, or take it out of the suite",
                ((case.path, case_line, case_col),),
            )
