"""The agent's distribution pulls nothing of the TUI, checked offline (no network, no registry).

Two views:

* the declared requirement closure of tau-agent: its own and tau-gpuhealth's requirements from
  their pyproject.toml files, third-party ones from the installed metadata of this virtual
  environment (scripts/setup.sh installs every one of them), holds no Textual, keyring or ruamel;
* a clean virtual environment holding only that closure: the two local packages copied in as a
  wheel would install them, each third-party distribution of the closure linked from this
  environment's site-packages. There the agent and the health model import, Textual cannot, and
  importing the agent loads nothing of tau_tui.

scripts/agent_install_check.sh does the same install from the registry and prints its `pip list`.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCAL = {
    "tau-tui": (ROOT / "pyproject.toml", None),
    "tau-gpuhealth": (ROOT / "gpuhealth" / "pyproject.toml", ROOT / "gpuhealth" / "tau_gpuhealth"),
    "tau-agent": (ROOT / "agent" / "pyproject.toml", ROOT / "agent" / "tau_agent"),
}
TUI_ONLY = {"textual", "keyring", "ruamel-yaml", "tau-tui"}


def _declared(name: str) -> list[str]:
    """Requirements of a local distribution (its pyproject.toml) or an installed third-party one."""
    if name in LOCAL:
        project = tomllib.loads(LOCAL[name][0].read_text("utf-8"))["project"]
        return list(project.get("dependencies", []))
    try:
        return importlib.metadata.requires(name) or []
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{name} is not installed in this virtual environment; run scripts/setup.sh")


def requirement_closure(root: str) -> dict[str, str]:
    """Every distribution ``root`` needs, transitively: canonical name -> the one that required it."""
    required_by: dict[str, str] = {}
    pending: list[tuple[str, frozenset[str], str]] = [(root, frozenset(), "")]
    while pending:
        name, extras, parent = pending.pop()
        key = canonicalize_name(name)
        if key in required_by and not extras:
            continue
        required_by.setdefault(key, parent)
        for line in _declared(key):
            requirement = Requirement(line)
            wanted = {""} | set(extras)
            if requirement.marker is not None and not any(requirement.marker.evaluate({"extra": e}) for e in wanted):
                continue
            pending.append((requirement.name, frozenset(requirement.extras), key))
    return required_by


def test_the_walk_finds_textual_in_the_tui_closure():
    """The walk is able to find what the agent must not have: the TUI's closure holds it."""
    assert TUI_ONLY - {"tau-tui"} <= set(requirement_closure("tau-tui"))
    assert "tau-gpuhealth" in requirement_closure("tau-tui")


def test_the_agent_closure_holds_nothing_of_the_tui():
    closure = requirement_closure("tau-agent")
    assert {"tau-gpuhealth", "kubernetes", "pydantic", "pyyaml", "nvidia-ml-py", "prometheus-client"} <= set(closure)
    found = {name: closure[name] for name in TUI_ONLY if name in closure}
    assert not found, f"the agent's install would pull {found} (name: required by)"


def test_the_health_model_needs_only_pydantic_and_pyyaml():
    assert {canonicalize_name(Requirement(line).name) for line in _declared("tau-gpuhealth")} == {"pydantic", "pyyaml"}


def test_the_agent_image_builds_from_the_two_distributions_only():
    dockerfile = (ROOT / "agent" / "Dockerfile").read_text("utf-8")
    assert "pip wheel --no-deps --wheel-dir /wheels ./gpuhealth ./agent" in dockerfile
    assert "tau_tui" not in dockerfile
    included = [
        line[1:]
        for line in (ROOT / "agent" / "Dockerfile.dockerignore").read_text("utf-8").splitlines()
        if line.startswith("!")
    ]
    assert included and all(path.startswith(("gpuhealth/", "agent/")) for path in included), included


def _site_packages(venv: Path) -> Path:
    found = list((venv / "lib").glob("python3*/site-packages"))
    assert len(found) == 1, found
    return found[0]


def _link_distribution(name: str, site: Path) -> None:
    """Link a distribution's top-level files and folders from this environment into ``site``."""
    dist = importlib.metadata.distribution(name)
    tops = {Path(str(file)).parts[0] for file in dist.files or [] if not str(file).startswith("..")}
    for top in sorted(tops):
        source = Path(str(dist.locate_file(top)))
        target = site / top
        if source.exists() and not target.exists():
            target.symlink_to(source, target_is_directory=source.is_dir())


IMPORT_CHECK = r"""
import importlib, json, pkgutil, sys
import tau_agent, tau_gpuhealth
modules = [info.name for package in (tau_gpuhealth, tau_agent)
           for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
for module in modules:
    importlib.import_module(module)
from tau_gpuhealth.xid import load_xid_catalog
from tau_gpuhealth.nodeconditions import packaged_mapping
load_xid_catalog(); packaged_mapping()
try:
    import textual
    textual_importable = True
except ImportError:
    textual_importable = False
print(json.dumps({
    "modules": modules,
    "loaded": sorted({m.split(".")[0] for m in sys.modules}),
    "textual_importable": textual_importable,
    "distributions": sorted(d.metadata["Name"] for d in importlib.metadata.distributions()),
    "agent_file": tau_agent.__file__,
}))
"""


def test_a_clean_environment_with_the_agent_closure_runs_the_agent_without_textual(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = _site_packages(venv)
    for _pyproject, package in LOCAL.values():
        if package is not None:  # the two local packages, as their wheels install them
            shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    closure = requirement_closure("tau-agent")
    for name in sorted(set(closure) - set(LOCAL)):
        _link_distribution(name, site)

    # -I: no PYTHONPATH, no user site, no current folder; run from tmp_path so the checkout is out of reach.
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-B", "-c", IMPORT_CHECK],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.splitlines()[-1])
    print("distributions in the clean environment (its pip list):", ", ".join(report["distributions"]))
    assert Path(report["agent_file"]).is_relative_to(site)
    assert "tau_agent.main" in report["modules"] and "tau_gpuhealth.model" in report["modules"]
    assert not report["textual_importable"]
    assert not {"textual", "tau_tui", "keyring", "ruamel"} & set(report["loaded"]), report["loaded"]
    assert not {canonicalize_name(d) for d in report["distributions"]} & TUI_ONLY, report["distributions"]
