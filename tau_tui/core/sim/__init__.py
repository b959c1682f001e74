"""The embedded simulated cluster (``tau-tui --demo``, deterministic tests)."""
