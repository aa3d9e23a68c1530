"""Command groups, one module each; cli.py registers them with one line apiece."""
