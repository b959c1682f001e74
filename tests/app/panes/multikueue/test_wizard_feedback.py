"""Issue #43 defect 10 and "feedback while working": the wizard's ``r`` changed nothing on screen for
8 s, and after ``y`` there were 2.4 s with no sign that it was verifying.

Now ``r`` surveys at once and, while a step's check runs, the line under the title says which step
it is verifying, with a spinner; after ``y`` it says which step it applies and waits for.  ``esc``
stops either: the screen says "cancelled" at once, a stopped survey claims no step's state, and a
stopped wait says what was sent and that the step is not verified.  The slow step is made slow by
an event the test holds, never by time."""

from __future__ import annotations

import threading

from tau_tui.app import TauApp
from tau_tui.core.operations.multikueue_steps.access import SECRET
from tau_tui.core.operations.multikueue_steps.engine import Check
from tau_tui.screens.multikueue_wizard import MultiKueueWizardScreen
from tau_tui.widgets.confirm_dialog import ConfirmDialog
from tests.app.helpers import async_test, of_type, pause_until, settle, settle_until, settle_until_done, visible_text
from tests.app.panes.multikueue.test_multikueue_wizard import open_flow, step_marks, wizard_app

#: A bound for a hang only (a gate the test forgot to open), never a speed.
GATE_HANG_S = 120


class Gate:
    """A step's verify that waits until the test opens the gate; counts its calls."""

    def __init__(self, step, holds_from=lambda: True, answers_not_yet: bool = False):
        """``holds_from``: the gate holds the calls made once it says so (before, they pass);
        ``answers_not_yet``: a held call then answers that the step's condition is not there yet."""
        self.step, self.verify = step, step.verify
        self.entered, self.opened = threading.Event(), threading.Event()
        self.calls = 0
        self.holds_from, self.answers_not_yet = holds_from, answers_not_yet
        step.verify = self  # an instance attribute: the engine calls step.verify(ctx)

    def __call__(self, ctx):
        if not self.holds_from():
            return self.verify(ctx)
        self.calls += 1
        self.entered.set()
        self.opened.wait(GATE_HANG_S)
        if self.answers_not_yet:
            return Check(False, "the condition is not there yet")
        return self.verify(ctx)

    def close(self) -> None:
        self.opened.set()
        self.step.verify = self.verify


def secret(lab):
    return lab.world.store.read(SECRET, "lab-worker-1-kubeconfig", "kueue-system")


@async_test
async def test_r_shows_the_step_it_verifies_and_esc_stops_it_claiming_nothing(tmp_path, lab):
    app = wizard_app(tmp_path, lab)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await open_flow(pilot, app, ":mk setup")
        wizard = app.screen
        assert isinstance(wizard, MultiKueueWizardScreen) and wizard.exercise is not None
        marks = step_marks(app)
        # r surveys at once and says so, however quick it was
        await pilot.press("r")
        await settle_until_done(pilot, lambda: "✓ verified again: 0/5 steps verified" in visible_text(app),
                                "the line saying the steps were verified again")
        first = wizard.exercise.flow.steps[0]
        gate = Gate(first)
        try:
            await pilot.press("r")
            await pause_until(pilot, lambda: f"verifying: {first.title}" in visible_text(app),
                              "the line saying which step is being verified")
            assert gate.entered.is_set() and "esc cancels" in visible_text(app)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is wizard  # esc stopped the survey; it did not leave the wizard
            shown = visible_text(app)
            assert f"✗ cancelled: verifying '{first.title}' stopped: nothing was changed" in shown, shown
        finally:
            gate.close()
        await settle_until_done(pilot, lambda: "no step's state is known" in str(wizard.query_one("#pane-status").render()),
                                "the stopped survey's status")
        assert step_marks(app) == marks  # a stopped survey claims nothing
        assert "✗ cancelled" in visible_text(app)
        # nothing runs now: esc goes back as everywhere
        await pilot.press("escape")
        await settle_until(pilot, lambda: app.screen is not wizard)
        assert app.screen is not wizard


@async_test
async def test_after_y_it_says_it_waits_for_the_step_and_esc_says_what_was_sent(tmp_path, lab):
    app = wizard_app(tmp_path, lab)
    messages: list = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await open_flow(pilot, app, ":mk setup")
        wizard = app.screen
        assert isinstance(wizard, MultiKueueWizardScreen) and wizard.exercise is not None
        first = wizard.exercise.flow.steps[0]
        await pilot.press("a")
        await settle_until_done(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the preview")
        # the check holds inside the wait for verification only (not the apply's own guards, nor a survey)
        waiting = threading.local()
        wait_verified = wizard.exercise.wait_verified

        def marked_wait(*args, **kwargs):
            waiting.now = True
            try:
                return wait_verified(*args, **kwargs)
            finally:
                waiting.now = False

        wizard.exercise.wait_verified = marked_wait  # type: ignore[method-assign]
        gate = Gate(first, holds_from=lambda: getattr(waiting, "now", False), answers_not_yet=True)
        try:
            await pilot.press("y")
            await pause_until(pilot, lambda: app.screen is wizard and f"waiting for: {first.title}" in visible_text(app),
                              "the line saying which step it waits for")
            assert secret(lab) is not None  # sent
            await pilot.press("escape")
            await pilot.pause()
            shown = visible_text(app)
            assert app.screen is wizard and f"✗ cancelled: waiting for '{first.title}' stopped: sent " in shown, shown
            assert "kueue-system/lab-worker-1-kubeconfig" in shown and "NOT verified" in shown, shown
        finally:
            gate.close()
        await settle_until_done(pilot, lambda: of_type(messages, TauApp.MutationApplied), "the apply's end")
        applied = of_type(messages, TauApp.MutationApplied)[-1]
        assert not applied.ok
        assert "lab-worker-1-kubeconfig" in applied.text and "NOT verified: verification stopped by the operator" in applied.text
        assert gate.calls == 1  # told to stop, it asked no more
