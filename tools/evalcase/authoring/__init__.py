"""Authoring and interchange: init, new, fmt, import, exports, coverage, statistics and
a case's review (``case_review``: its approval, ``evalcase review-case``).

Each module is one unit of behaviour; the command line (evalcase.commands.authoring)
only parses options and prints what these return.
"""
