"""Grading: graders (one module each, registry in ``grade.graders``), attempt verdicts,
pass@k / pass^k aggregation, release gates and failure classes.

Graders read only the case's ``JudgeSpec`` and the runner's attempt record
(docs/design/execution-contract.md sections 2, 7 and 8). Importing this package is cheap:
lint imports ``evalcase.grade.graders`` for the grader names and nothing else.
"""
