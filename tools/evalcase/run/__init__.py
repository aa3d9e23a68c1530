"""The runner: execute a dataset against an agent inside a runner-owned environment."""
