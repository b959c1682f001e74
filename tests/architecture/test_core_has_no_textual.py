"""The core is UI-free: importing every tau_tui.core module pulls in no textual module."""

import subprocess
import sys

PROGRAM = """
import importlib, pkgutil, sys
import tau_tui.core as core
for info in pkgutil.walk_packages(core.__path__, "tau_tui.core."):
    importlib.import_module(info.name)
leaked = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print(len([m for m in sys.modules if m.startswith("tau_tui.core")]), leaked)
sys.exit(1 if leaked else 0)
"""


def test_importing_the_core_pulls_in_no_textual():
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    imported = int(result.stdout.split()[0])
    assert imported >= 10
