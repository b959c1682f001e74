"""Widgets of the Textual app, one per module."""
