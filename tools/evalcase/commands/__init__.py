"""CLI command groups, one module each; each lists its commands in ``COMMANDS`` and
``evalcase.cli`` registers them."""
