"""`tau-tui validate` reports every problem it can find in one run: all shape
errors, the rule errors of the sections whose shape is valid, and profile errors."""

from __future__ import annotations

from pathlib import Path

from tau_tui.cli import main

SNAPSHOT = Path(__file__).resolve().parents[2] / "tau_tui" / "examples" / "profiles-snapshot.yaml"

SHAPE_AND_RULES = """\
name: Bad_Name
image: python:3.12-slim
entrypoint: train.py
compute:
  gpus_per_worker: 99
  workers: zero
runtime:
  env:
    TAU_RESERVED: x
policy:
  namespace: taugrid-default
resilience:
  max_retries: -1
"""

RULES_AND_PROFILE = """\
name: Bad_Name
image: python:3.12-slim
entrypoint: train.py
runtime:
  env:
    TAU_RESERVED: x
policy:
  namespace: taugrid-default
  team: research
  lane: training
  profile: azure.research.does-not-exist
"""


def _validate(tmp_path, text, capsys, *extra) -> tuple[int, str]:
    (tmp_path / "train.py").write_text("print(1)\n")
    path = tmp_path / "tau.yaml"
    path.write_text(text)
    code = main(["validate", str(path), *extra])
    return code, capsys.readouterr().err


def test_shape_errors_and_rule_errors_of_valid_sections_in_one_run(tmp_path, capsys):
    code, err = _validate(tmp_path, SHAPE_AND_RULES, capsys)
    assert code == 2
    # every shape error
    assert "compute.gpus_per_worker: must be <= 8" in err
    assert "compute.workers: must be a whole number" in err
    assert "resilience.max_retries: must be >= 0" in err
    # and the rules of the sections whose shape is valid (run, runtime)
    assert "name: must be a DNS label" in err
    assert "runtime.env.TAU_RESERVED: TAU_RESERVED is reserved" in err
    # in file order, each with file:line:col
    lines = [line for line in err.splitlines() if not line.startswith("  fix:")]
    assert [int(line.split(":")[1]) for line in lines] == sorted(int(line.split(":")[1]) for line in lines)


def test_rule_errors_and_profile_errors_in_one_run(tmp_path, capsys):
    code, err = _validate(tmp_path, RULES_AND_PROFILE, capsys, "--profiles", str(SNAPSHOT))
    assert code == 2
    assert "name: must be a DNS label" in err
    assert "TAU_RESERVED is reserved" in err
    assert "azure.research.does-not-exist" in err and "policy.profile" in err


def test_a_valid_file_with_a_resolving_profile_passes(tmp_path, capsys):
    text = RULES_AND_PROFILE.replace("Bad_Name", "good-name").replace("    TAU_RESERVED: x\n", "    STEPS: '2'\n")
    code, err = _validate(tmp_path, text.replace("does-not-exist", "training.xl"), capsys, "--profiles", str(SNAPSHOT))
    assert code == 0, err
    assert "valid" in err
