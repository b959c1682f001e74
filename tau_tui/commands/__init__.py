"""The headless `tau-tui` commands, one idea per module; `registry.HANDLERS` names them all.

A new command is one module here plus one line in `registry.py` (and its options in `parser.py`).
"""
