"""#44 item 8, on the simulated fleet through `tau-tui multikueue`: no failure is swallowed.

* the manager cannot say who the caller is (SelfSubjectReview fails): nothing is applied, exit 1, and the
  record cannot end verified (before: identity "unknown", the setup applied, record verified, exit 0);
* a corrupt record: `records` names it and exits 1, `status` cannot tell the flow in force and exits 1
  (before: both skipped it, exit 0);
* `rotate --worker UNKNOWN`: exit 2 naming the plan's workers, the demo's too (before: KeyError, exit 1);
* docs/multikueue.md's exit-code table lists every code the CLI gives, 7 and 130 included, and no
  longer says a worker that cannot be asked is exit 1 everywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tau_tui import cli
from tau_tui.commands.parser import EXIT_FAILED, EXIT_INVALID, EXIT_OK
from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.operations.multikueue_steps.access import SECRET, SELF_SUBJECT_REVIEW
from tests.multikueue_lab import cli_lab

DOCS = Path(__file__).resolve().parents[2] / "docs" / "multikueue.md"


@pytest.fixture
def lab(tmp_path, monkeypatch):
    return cli_lab(tmp_path, monkeypatch)


def mk(*argv: str) -> int:
    return cli.main(["multikueue", *argv])


def test_an_identity_that_cannot_be_read_applies_nothing_and_never_ends_verified(lab, monkeypatch, capsys):
    create = lab.backend._api_create

    def no_self_review(rt, namespace, body, dry_run):
        if rt == SELF_SUBJECT_REVIEW:
            raise ApiFailure(403, "Forbidden", "selfsubjectreviews.authentication.k8s.io is forbidden")
        return create(rt, namespace, body, dry_run)
    monkeypatch.setattr(lab.backend, "_api_create", no_self_review)
    assert mk("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_FAILED
    assert "could not say who you are" in capsys.readouterr().err
    assert lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system") is None
    [record] = [json.loads(p.read_text()) for p in lab.records.glob("*.json")]
    assert record["outcome"] != "verified" and record["identity"].startswith("unknown")


def test_a_corrupt_record_is_named_not_skipped(lab, capsys):
    assert mk("setup", "--plan", lab.plan_path, "--yes", "--timeout", "30") == EXIT_OK
    cluster = lab.backend.current_context
    (lab.records / f"20990101T000000-drain-{cluster}.json").write_text('{"flow": "drain", "cluster": ')
    capsys.readouterr()
    assert mk("records") == EXIT_FAILED
    captured = capsys.readouterr()
    assert f"20990101T000000-drain-{cluster}.json: not a readable exercise record" in captured.err
    assert "setup" in captured.out  # the readable one is still listed
    assert mk("status", "--plan", lab.plan_path) == EXIT_FAILED
    assert "cannot tell the flow in force" in capsys.readouterr().err
    assert mk("status", "--plan", lab.plan_path, "--flow", "setup") == EXIT_OK


def test_rotate_an_unknown_worker_is_invalid_input(lab, capsys):
    assert mk("rotate", "--plan", lab.plan_path, "--worker", "UNKNOWN", "--new-context", "x", "--yes") == EXIT_INVALID
    assert "worker 'UNKNOWN' is not in the plan; its workers: lab-worker-1, lab-worker-2" in capsys.readouterr().err


def test_rotate_an_unknown_worker_of_the_demo_is_invalid_input(capsys):
    """--demo: the demo's rotation plan (read from its cluster) names its workers; none is a KeyError."""
    assert mk("rotate", "--demo", "--worker", "UNKNOWN", "--new-context", "x", "--yes") == EXIT_INVALID
    err = capsys.readouterr().err
    assert "worker 'UNKNOWN' is not in the plan; its workers: " in err and "westus3-worker" in err


def test_the_docs_exit_code_table_lists_every_code_the_cli_gives():
    text = DOCS.read_text()
    table = text[text.index("| code |"):]
    table = table[:table.index("\n\n")]
    codes = {int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert codes == {0, 1, 2, 3, 4, 5, 6, 7, 130}, codes
    one = next(line for line in table.splitlines() if line.startswith("| 1 |"))
    assert "or a worker could not be asked" not in one
    four = next(line for line in table.splitlines() if line.startswith("| 4 |"))
    assert "cannot check directly" in four and "matrix" in four
