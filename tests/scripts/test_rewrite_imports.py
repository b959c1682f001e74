"""scripts/dev/rewrite_imports.py moves imports of the old flat core to the new packages."""

# rewrite_imports: skip file

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("rewrite_imports", ROOT / "scripts" / "dev" / "rewrite_imports.py")
rewrite_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rewrite_imports)


def rewrite(text: str, module: str = "tau_tui.screens.example", is_package: bool = False) -> tuple[str, list[str]]:
    return rewrite_imports.rewrite_source(text, module, is_package)


def test_parenthesised_import_of_a_split_module_is_split_by_new_module():
    text = (
        "from tau_tui.core.cluster.api import (\n"
        "    ClusterError,\n"
        "    NodeView,\n"
        "    ResourceKind as R,\n"
        ")\n"
    )
    new, problems = rewrite(text)
    assert problems == []
    assert new == (
        "from tau_tui.core.cluster.errors import ClusterError\n"
        "from tau_tui.core.cluster.kinds import ResourceKind as R\n"
        "from tau_tui.core.cluster.view_types import NodeView\n"
    )


def test_lazy_import_in_a_function_keeps_its_indent():
    text = "def f():\n    from tau_tui.core.gpu_health import Verdict, view_from_node\n    return Verdict\n"
    new, problems = rewrite(text)
    assert problems == []
    assert new == (
        "def f():\n"
        "    from tau_gpuhealth.nodeview import view_from_node\n"
        "    from tau_gpuhealth.verdicts import Verdict\n"
        "    return Verdict\n"
    )


def test_relative_import_stays_relative_when_the_file_does_not_move():
    new, problems = rewrite("from .core.render import to_yaml\nfrom .core.config import load_config, ALIASES\n", "tau_tui.cli")
    assert problems == []
    assert new == (
        "from .core.runconfig.manifests import to_yaml\n"
        "from .core.runconfig.config import ALIASES\n"
        "from .core.runconfig.loader import load_config\n"
    )


def test_relative_import_of_a_moving_file_becomes_absolute():
    new, _ = rewrite("from .diagnostics import Diagnostic\n", "tau_tui.core.yamlsource")
    assert new == "from tau_tui.core.runconfig.diagnostics import Diagnostic\n"


def test_module_imports_and_dotted_strings_follow_the_move():
    text = (
        "import tau_tui.core.drain as drain\n"
        "from tau_tui.core import positions\n"
        'monkeypatch.setattr("tau_tui.core.cluster.api.ClusterError", None)\n'
    )
    new, problems = rewrite(text, "tests.core.test_example")
    assert problems == []
    assert new == (
        "import tau_tui.core.operations.drain as drain\n"
        "from tau_tui.core.cluster import positions\n"
        'monkeypatch.setattr("tau_tui.core.cluster.errors.ClusterError", None)\n'
    )


def test_unmoved_imports_stay_byte_for_byte_and_a_second_run_changes_nothing():
    text = "from tau_tui.core.cluster import real\nfrom  tau_tui.widgets.status_text   import style_of\nfrom tau_tui.core.cluster.api import QUEUE_NAME_LABEL\n"
    once, _ = rewrite(text)
    assert once.splitlines()[:2] == text.splitlines()[:2]
    twice, problems = rewrite(once)
    assert problems == [] and twice == once


def test_files_marked_to_skip_are_left_alone():
    assert Path(__file__) not in rewrite_imports._files([str(Path(__file__).parent)])
    assert ROOT / "tests" / "scripts" / "test_setup_script.py" in rewrite_imports._files([str(Path(__file__).parent)])


def test_what_cannot_be_rewritten_is_reported():
    _, problems = rewrite("import tau_tui.core.gpu_health\nfrom tau_tui.core.cluster.api import NoSuchName\n")
    assert len(problems) == 2
    assert "split" in problems[0] and "NoSuchName" in problems[1]
