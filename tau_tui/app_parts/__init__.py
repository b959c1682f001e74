"""Parts of the app shell (`tau_tui/app.py`), one idea per module, that `TauApp` is built from.

Below the shell in the import layers: nothing here imports `tau_tui.app` or `tau_tui.cli`.
"""
