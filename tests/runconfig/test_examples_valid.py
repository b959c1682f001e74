"""The shipped example tau.yaml and the README's are valid out of the box:
`tau-tui validate` passes and their profile resolves against the demo's TauCluster
and against the shipped profiles snapshot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tau_tui.cli import main
from tau_tui.core.runconfig.loader import load_config, load_config_text
from tau_tui.core.runconfig.pipeline import render_run
from tau_tui.core.runconfig.profiles import load_snapshot, profile_set_from_taucluster
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.scenario import build_world

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "tau_tui" / "examples"


def _readme_example() -> str:
    text = (REPO / "README.md").read_text()
    match = re.search(r"A minimal `tau.yaml`:\s*```yaml\n(.*?)```", text, re.S)
    assert match, "README.md lost its minimal tau.yaml block"
    return match.group(1)


@pytest.fixture(scope="module")
def demo_profiles():
    backend = SimulatedBackend(build_world("demo"), realtime=False)
    backend.start()
    assert backend.wait_synced(10)
    try:
        return profile_set_from_taucluster(dict(backend.tau_cluster().raw))
    finally:
        backend.close()


def test_validate_passes_on_the_shipped_example(capsys):
    assert main(["validate", str(EXAMPLES / "tau.yaml")]) == 0
    assert "valid" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["examples", "readme"])
def test_example_profile_resolves_in_the_demo_and_the_snapshot(source, demo_profiles):
    if source == "examples":
        loaded = load_config(EXAMPLES / "tau.yaml")
    else:
        loaded = load_config_text(_readme_example(), "README.md", EXAMPLES)
    wanted = loaded.config.policy.profile
    for profile_set in (demo_profiles, load_snapshot(EXAMPLES / "profiles-snapshot.yaml")):
        run = render_run(loaded, profile_set, RenderOptions(None, None, None))
        labels = run.manifests[-1]["metadata"]["labels"]
        assert labels["tau.azure.com/profile"] == wanted
