"""Authoring and interchange: init, new, fmt, import, exports, coverage and statistics.

Each module is one unit of behaviour; the command line (evalcase.commands.authoring)
only parses options and prints what these return.
"""
