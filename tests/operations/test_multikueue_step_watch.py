"""The step engine tells a watcher which step it checks and stops when told (issue #43, feedback while
working): a stopped survey raises ``Cancelled`` and claims no state; a stopped wait for verification
says the step is not verified and checks no more."""

from __future__ import annotations

import pytest

from tau_tui.core.operations.multikueue_steps.engine import Cancelled, StepState, StepWatch
from tests.multikueue_lab import YES


def test_a_survey_names_each_step_it_checks_and_stops_after_the_one_it_was_told_at(lab):
    lab.exercise("setup").run(YES, timeout=30)
    exercise = lab.exercise("setup")
    seen: list[tuple[str, str]] = []
    watch = StepWatch(on_step=lambda step, doing: seen.append((step.key, doing)))
    statuses = exercise.survey(watch)
    assert all(s.state is StepState.VERIFIED for s in statuses)
    assert seen == [(s.step.key, "verifying") for s in statuses]

    seen.clear()
    stopped = StepWatch(on_step=lambda step, doing: seen.append((step.key, doing)), stop=lambda: len(seen) >= 2)
    with pytest.raises(Cancelled) as caught:
        exercise.survey(stopped)
    assert caught.value.step is statuses[1].step and len(seen) == 2


def test_a_stopped_wait_is_not_verified_and_checks_no_more(lab):
    exercise = lab.exercise("setup")
    first = exercise.survey()[0].step  # not applied: it never verifies
    checks: list[str] = []
    watch = StepWatch(on_step=lambda step, doing: checks.append(doing), stop=lambda: len(checks) >= 3)
    check = exercise.wait_verified(first, 600, watch)
    assert not check.ok and check.reason.startswith("verification stopped by the operator after"), check.reason
    assert checks == ["waiting for"] * 3
