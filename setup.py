"""Records the commit a wheel is built from in tau_tui/build_commit.txt (read by ``tau-tui --version``).

Everything else about the distribution is in pyproject.toml.
"""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _version_module():
    spec = importlib.util.spec_from_file_location("_tau_tui_version", ROOT / "tau_tui" / "version.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyRecordingCommit(build_py):
    def run(self):
        super().run()
        version = _version_module()
        commit = version.checkout_commit(ROOT)
        if commit and not self.editable_mode:
            target = Path(self.build_lib, "tau_tui", version.BUILD_COMMIT_FILE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(commit + "\n", encoding="utf-8")


setup(cmdclass={"build_py": BuildPyRecordingCommit})
