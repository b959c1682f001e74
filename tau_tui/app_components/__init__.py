"""The components the app (`tau_tui/app.py`) owns, one idea per module: plain objects that
`TauApp.__init__` makes, each holding the fields it fills and the app as an
:class:`~tau_tui.app_components.shell.AppShell`.

Below the app in the import layers: nothing here imports `tau_tui.app` or `tau_tui.cli`.
"""
