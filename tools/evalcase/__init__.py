"""evalcase: a git-native repository of evaluation cases, and the linter that guards it."""

__version__ = "0.1.0"
