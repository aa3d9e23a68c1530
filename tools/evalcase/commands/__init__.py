"""The commands, one module per area (lint, versioning, run, grade, authoring,
case_review); each lists its commands in ``COMMANDS``, and ``evalcase.cli`` names every
command with its module in ``COMMAND_MODULES``. What they share is ``common``."""
