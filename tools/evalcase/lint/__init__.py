"""The linter: rules, their registry, suppressions, the cache and the orchestration."""
