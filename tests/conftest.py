"""Test-wide setup: the control-plane harness fixtures (t1, t2, t3) live in tests/harness."""

pytest_plugins = ["tests.harness.fixtures"]
