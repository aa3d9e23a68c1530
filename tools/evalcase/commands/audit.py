"""``evalcase audit``: the thin CLI over :mod:`evalcase.audit` (docs/audit.md)."""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Mapping
from typing import Any

import click

from evalcase.commands.common import (
    EXIT_FATAL,
    concurrency_option,
    config_for,
    executor_option,
    fatal_errors,
    progress_option,
    ray_address_option,
    root_option,
    timeout_option,
)

EXIT_FINDINGS = 1


@click.command("audit")
@click.argument("dataset")
@executor_option
@ray_address_option
@concurrency_option
@timeout_option
@click.option(
    "--select",
    "selects",
    multiple=True,
    help="ID glob or tag:/role:/risk:/type: VALUE (repeatable: union), as evalcase run.",
)
@click.option(
    "--force", is_flag=True, help="Audit every case again, even those whose audit is stored."
)
@click.option(
    "--keep-runs",
    is_flag=True,
    help="Keep the audit's runs under .git/evalcase/audit/work/ (default: removed once the "
    "facts are stored).",
)
@progress_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text, or json (every case's stored audit).",
)
@root_option
@fatal_errors
def audit(
    dataset: str,
    executor: str | None,
    ray_address: str | None,
    concurrency: int | None,
    timeout_s: float | None,
    selects: tuple[str, ...],
    force: bool,
    keep_runs: bool,
    progress: str,
    output_format: str,
    root: str | None,
) -> None:
    """Audit DATASET[@vN|@REV]: for every counted case, the gold oracle built from the
    answer key must pass every hard grader that needs no judge, and no degenerate agent
    (silent, refuse, handoff, echo, parrot, flail) may pass, unless the case declares it
    (audit: {may_pass: [...]}); the gold without any one expected call, and the gold
    plus one write on an entity the case does not concern, must fail (drop_passes,
    collateral_damage; audit: {redundant_calls: [...]} declares a call not needed); and
    which criteria rest on the judge alone.

    Each agent is one run through the normal runner (local pool or --executor ray);
    results are stored by case content digest in the git directory
    (.git/evalcase/audit/; never facts committed to the tree), so an unchanged case is
    not audited again and an interrupted audit resumes. Exit status: 0 when no
    case has a finding, 1 otherwise, 2 on a usage or fatal error."""
    gc.enable()  # runs build reference cycles (see evalcase run)
    from evalcase.audit.runner import AuditOptions
    from evalcase.audit.runner import audit as run_audit
    from evalcase.commands.progress import progress_display

    config = config_for(root)
    rc = config.run
    if ray_address and executor not in (None, "ray"):
        raise click.UsageError("--ray-address goes with --executor ray")
    options = AuditOptions(
        executor="ray" if ray_address else (executor or rc.executor),
        concurrency=concurrency or rc.concurrency,
        timeout_s=timeout_s or rc.timeout_s,
        ray_address=ray_address,
        force=force,
        keep_runs=keep_runs,
        select=selects,
    )
    try:
        result = run_audit(
            config, dataset, options, lambda label: progress_display(label, progress)
        )
    except KeyboardInterrupt:
        click.echo("evalcase: audit interrupted; run it again to resume", err=True)
        sys.exit(130)
    from evalcase.audit_facts.store import tracked_facts, tracked_warning

    if tracked := tracked_facts(config.root):
        click.echo(f"warning: {tracked_warning(tracked)}", err=True)
    if output_format == "json":
        click.echo(json.dumps(result.cases, ensure_ascii=False, indent=2, sort_keys=True))
    else:
        for line in text_lines(result.cases):
            click.echo(line)
        for path, why in sorted(result.unbuilt.items()):
            click.echo(f"not audited: {path}: {why}")
        click.echo(
            f"{result.dataset_id}@{result.dataset_version}: {len(result.cases)} cases, "
            f"{result.count('passed')} passed, {result.count('findings')} with findings, "
            f"{result.count('unproven')} unproven; {len(result.audited)} audited now, "
            f"{len(result.cases) - len(result.audited)} from the store"
        )
    if result.unbuilt:
        sys.exit(EXIT_FATAL)
    if not result.ok:
        sys.exit(EXIT_FINDINGS)


def text_lines(cases: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per case with findings or warnings, then one per finding and warning."""
    from evalcase.audit_facts.store import summary

    out: list[str] = []
    for case_id, facts in sorted(cases.items()):
        findings = [f for f in facts.get("findings") or () if isinstance(f, Mapping)]
        warnings = [str(w) for w in facts.get("warnings") or ()]
        declared = facts.get("declared") or []
        if not findings and not warnings:
            continue
        note = f" (may_pass: {', '.join(map(str, declared))})" if declared else ""
        out.append(f"{case_id} {facts.get('case_version')}: {facts.get('status')}{note}")
        out += [f"  finding  {summary(f)}" for f in findings]
        out += [f"  warning  {w}" for w in warnings]
    return out


COMMANDS = (audit,)
