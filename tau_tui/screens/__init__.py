"""One module per pane of the Textual app."""
