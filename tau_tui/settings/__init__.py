"""The app's own settings, not tau.yaml: ``config.yaml`` (theme, keymap,
refresh tick, team, lane) in :mod:`~tau_tui.settings.settings_file`, and the
theme files in :mod:`~tau_tui.settings.theme_files`."""
