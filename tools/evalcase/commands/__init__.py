"""CLI command groups, one module each, registered in cli.py."""
