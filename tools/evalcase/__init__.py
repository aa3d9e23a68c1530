"""evalcase: a git-native repository of evaluation cases, with a linter and a runner."""

__version__ = "0.1.0"
