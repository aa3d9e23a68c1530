"""CLI command groups, one module each, registered at the end of ``evalcase.cli``."""
