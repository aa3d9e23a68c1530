"""Reports of a graded run: reports/<commit>/<run_id>/{grades.jsonl, report.json, report.md,
report.html}, and the comparison of two runs by stable case ID."""
