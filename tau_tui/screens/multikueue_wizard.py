"""The MultiKueue wizard (setup, rotation) and drain checklist: the
core step engine (``core/operations/multikueue_steps``) shown as a screen.

Left, every step with its state (✓ verified, ▶ next, 🔒 locked, ✗ refused or
failed, ? unreadable) and why; right, the selected step: what it does, the
exact objects it creates or deletes (credentials redacted), the live
verification's evidence, and for the matrix step the per-worker table.
``a`` applies the next step through the app's mutation flow (server dry-run
preview, confirmation, audit; refused in --readonly), then waits for its
verification.  The state always comes from the cluster (and the exercise
record), so leaving and coming back — or restarting — resumes where it stands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Label, Static

from tau_tui.core.operations.multikueue_steps import open_exercise
from tau_tui.core.operations.multikueue_steps.engine import Cancelled, Check, Exercise, Outcome, Refused, StepState
from tau_tui.core.operations.multikueue_steps.matrix import COLUMNS, dependency_matrix
from tau_tui.mutations.mutation import Mutation
from tau_tui.screens.base import PaneScreen
from tau_tui.screens.pane_reader import ReadRequest
from tau_tui.screens.wizard_work import WizardWork, WorkEnded, WorkProgress, cancelled_text, watched
from tau_tui.widgets.cell_text import one_line
from tau_tui.widgets.keyed_table import KeyedTable
from tau_tui.widgets.status_text import status_text, style_of
from tau_tui.widgets.table_messages import RowHighlighted
from tau_tui.widgets.work_line import WorkLine

#: Seconds the wizard waits for a step's promised condition after applying it.
VERIFY_TIMEOUT = 120.0
#: Ticks between automatic re-verifications (each one asks the manager and every worker).
RESURVEY_TICKS = 10
STATE_WORD = {StepState.VERIFIED: "done", StepState.READY: "pending", StepState.LOCKED: "unknown",
              StepState.REFUSED: "failed", StepState.FAILED: "failed", StepState.ERROR: "warning",
              StepState.ACTION: "warning"}


@dataclass
class WizardData:
    title: str = ""
    problem: str = ""
    rows: list = field(default_factory=list)
    detail: Text = field(default_factory=Text)
    matrix_rows: list = field(default_factory=list)
    status: str = ""
    current: str | None = None
    #: A survey stopped by esc: why nothing of it is shown.
    cancelled: str = ""


class MultiKueueWizardScreen(PaneScreen):
    PANE = "multikueue"
    PANE_TITLE = "MultiKueue"
    FILTERS_ROWS = False
    HELP = (
        "The MultiKueue setup wizard (also re-enables after a drain), drain checklist or credential rotation.  "
        "Steps run in order: a step "
        "unlocks only when every step before it verifies live.  Select a step to see what it does, the exact objects "
        "it creates or deletes (credentials redacted) and the evidence of its verification.  'a' applies the next "
        "step: server dry-run preview, confirmation, audit log, then it waits for the promised condition.  'c' (drain) "
        "cancels every pending owner of the dedicated queue when the hold step runs.  'r' verifies again.  While it "
        "verifies, previews or applies, the line under the title says which step and esc stops it (an apply already "
        "sent stays sent and is not verified).  Every run writes an exercise record (tau-tui multikueue records)."
    )
    MUTATING_ACTIONS = frozenset({"apply", "toggle_cancel"})
    VIEW_KINDS = ()
    BINDINGS = [
        Binding("a", "apply", "Apply next step", id="mkwizard.apply"),
        Binding("r", "reverify", "Verify again", id="mkwizard.reverify"),
        Binding("c", "toggle_cancel", "Cancel pending owners", id="mkwizard.cancel"),
        Binding("escape", "cancel_work", "Stop", id="mkwizard.stop", show=False),
    ]

    def __init__(self, flow: str, inputs: dict | None = None, plan_path: str | None = None) -> None:
        super().__init__()
        self.flow_name = flow
        self.inputs = dict(inputs or {})
        self.plan_path = plan_path
        self.exercise: Exercise | None = None
        self.problem = ""
        #: Where this flow keeps credentials in flight, when that needs saying (the demo's keyring).
        self.keyring_note = ""
        self.selected: str | None = None
        self._wanted = True
        self._ticks = 0
        self.last_statuses: list = []
        self._placed = False
        #: The long action running now (a survey, preview or apply), what it does, and what it sent.
        self._work: WizardWork | None = None
        #: The apply running now (its wait verifies the step; no survey runs beside it).
        self._applying: WizardWork | None = None
        #: ``r`` asked for a survey: its end is said on the work line, however quick it was.
        self._asked = False
        self._doing: tuple[str, str, tuple[str, ...]] = ("", "", ())

    def crumbs(self) -> str:
        return f"MultiKueue › {self.flow_name}"

    def compose_body(self) -> ComposeResult:
        yield Label(Text(f"MultiKueue {self.flow_name}"), id="wizard-title", classes="section-title")
        yield WorkLine(id="wizard-work")
        with Horizontal(id="wizard-body"):
            yield KeyedTable([("state", "State"), ("step", "Step")], id="wizard-steps")
            with VerticalScroll(id="wizard-detail-scroll"):
                yield KeyedTable([("worker", "Worker"), *((c.lower().replace(" ", "-"), c) for c in COLUMNS)],
                                 id="wizard-matrix")
                yield Static(Text("verifying…"), id="wizard-detail")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#wizard-matrix", KeyedTable).display = False

    # -- refresh: on demand, after an apply, and every RESURVEY_TICKS ----------

    def tick(self, force: bool = False) -> None:
        if self._applying is not None:
            return  # the apply waits for its step's verification itself; the survey follows it (done)
        self._ticks += 1
        if force or self._wanted or self._ticks >= RESURVEY_TICKS:
            self._ticks = 0
            self._wanted = False
            super().tick(force)

    def reverify(self, force: bool = False) -> None:
        """Survey the steps again (``force``: now, as ``r`` asks, not when the pane's reader finds it due)."""
        self._wanted = True
        self.tick(force)

    def _ensure_exercise(self) -> Exercise | None:
        if self.exercise is not None or self.problem:
            return self.exercise
        env = self.tau.multikueue_environment(self.plan_path)
        plan = env.plan_for(self.flow_name)
        if plan is None:
            self.problem = env.problem
            return None
        backend = self.tau.backend
        if backend is None:  # the pane collects only when connected (needs_backend); keep verifying until then
            return None
        # rotation keeps its credentials in a keyring; the drain keeps a revoked one there until its 401 is seen
        vault = env.vault_for(self.flow_name, backend.current_context or "cluster")
        self.keyring_note = env.keyring_note(self.flow_name)
        self.exercise = open_exercise(self.flow_name, backend, env.connector, plan, wait=env.wait,
                                      inputs=self.inputs, vault=vault, clock=env.clock)
        return self.exercise

    def collect(self, request: ReadRequest) -> WizardData:
        work = WizardWork()
        try:
            return self._survey(work)
        except Cancelled as stop:
            return WizardData(cancelled=f"verifying '{stop.step.title}' stopped: no step's state is known from that "
                                        "survey, nothing was changed; r verifies again")
        finally:
            self.post_message(WorkEnded(work))

    def _survey(self, work: WizardWork) -> WizardData:
        """Worker thread: every step's state, the selected step's detail (and matrix)."""
        data = WizardData()
        exercise = self._ensure_exercise()
        if exercise is None:
            data.problem = self.problem
            data.title = f"MultiKueue {self.flow_name}: no plan"
            return data
        # the keyring note first: the breadcrumb names the flow, and a narrow title still says where secrets are
        data.title = (f"{self.keyring_note} · " if self.keyring_note else "") + (
            f"{exercise.flow.title} · plan {exercise.ctx.plan.source}")
        watch = watched(self.post_message, work)
        # Always the cluster now: a finished rotation verifies from the manager's ledger and the record, live.
        statuses = exercise.survey(watch)
        for status in statuses:
            word = STATE_WORD[status.state]
            data.rows.append((status.step.key, [Text(f"{status.mark} {status.state.value}", style=style_of(word)),
                                                Text(status.step.title)]))
        selected = next((s for s in statuses if s.step.key == self.selected), None) or exercise.current(statuses) or statuses[-1]
        data.detail = self._detail(exercise, selected)
        data.current = selected.step.key
        if selected.step.kind == "matrix" and selected.state is not StepState.LOCKED:
            watch.on_step(selected.step, "reading the dependency matrix for")
            matrix = dependency_matrix(exercise.ctx)
            if watch.stop():
                raise Cancelled(selected.step)
            for row in matrix:
                data.matrix_rows.append((row.worker, [Text(row.worker)] + [
                    status_text("done" if c.status == "ok" else "failed" if c.status == "bad" else "unknown",
                                one_line(c.text, 40)) for _, c in row.cells]))
        done = sum(1 for s in statuses if s.state is StepState.VERIFIED)
        data.status = f"{done}/{len(statuses)} steps verified" + (
            "" if done < len(statuses) else f" · {exercise.flow.name} complete")
        self.last_statuses = statuses
        return data

    def _detail(self, exercise: Exercise, status) -> Text:
        step = status.step
        text = Text()
        text.append(f"{step.title}\n", style="bold")
        text.append(f"{step.explanation}\n\n")
        text.append(f"{status.mark} {status.state.value}", style="bold")
        if status.check.reason:
            # A guard's reason may start with the state's own word; say it once.
            reason = status.check.reason.removeprefix(f"{status.state.value}: ")
            text.append(f": {reason}")
        text.append("\n")
        if status.check.action:
            text.append(f"⚠ to do: {status.check.action}\n", style="bold")
        if step.kind == "matrix" and status.state is not StepState.LOCKED:
            text.append("  (the matrix above: one row per worker)\n")
        else:
            for line in status.check.evidence:
                text.append(f"  · {line}\n")
        if status.state is not StepState.VERIFIED:
            try:
                changes = step.changes(exercise.ctx)
            except Exception as err:  # unreadable or refused input: say so instead of the objects
                changes = []
                text.append(f"\nobjects cannot be listed yet: {getattr(err, 'message', err)}\n")
            if changes:
                text.append("\nobjects this step changes (credentials redacted):\n", style="bold")
                for change in changes:
                    text.append(change.yaml() + "\n")
        if step.key == "hold-and-drain":
            cancel = exercise.ctx.inputs.get("cancel")
            text.append(f"\ncancel pending owners: {'all' if cancel == 'all-pending' else 'none chosen'} (c toggles)\n")
        return text

    def apply(self, data: WizardData) -> None:
        if data.cancelled:  # a part of a survey: the steps stay as the last whole one found them
            self._asked = False
            self.set_status(data.cancelled)
            return
        if self._asked and not data.problem:
            self._asked = False
            self.query_one(WorkLine).ended(Text(f"✓ verified again: {data.status}", style=style_of("done")))
        self.query_one("#wizard-title", Label).update(Text(data.title, style="bold"))
        steps = self.query_one("#wizard-steps", KeyedTable)
        detail = self.query_one("#wizard-detail", Static)
        if data.problem:
            steps.apply_rows([], notice=Text(data.problem))
            detail.update(Text(data.problem))
            self.set_status("no plan")
            return
        steps.apply_rows(data.rows)
        if not self._placed and data.current is not None:
            # the cursor starts on the next step to do (and moves there after each apply)
            self._placed = True
            self.selected = data.current
            keys = [key for key, _ in data.rows]
            steps.move_cursor(row=keys.index(data.current), animate=False)
        detail.update(data.detail)
        matrix = self.query_one("#wizard-matrix", KeyedTable)
        matrix.display = bool(data.matrix_rows)
        if data.matrix_rows:
            matrix.apply_rows(data.matrix_rows)
        self.set_status(data.status)

    def on_keyed_table_row_highlighted(self, event: RowHighlighted) -> None:
        if event.table.id != "wizard-steps" or event.key is None:
            return
        key = event.key
        if key != self.selected:
            self.selected = key
            self.reverify()

    # -- actions ---------------------------------------------------------------

    def action_reverify(self) -> None:
        if self._applying is not None:
            self.notify("a step is being applied and waited for; r verifies again once it is done (esc stops the wait)")
            return
        self._asked = True
        self.reverify(force=True)

    # -- long actions: what they do, and esc ---------------------------------------

    def on_work_progress(self, message: WorkProgress) -> None:
        if message.work.cancel.is_set():
            return  # told to stop: the line says so already
        if message.doing in ("applying", "waiting for"):
            self._applying = message.work
        elif self._applying is not None:
            return  # a survey that began before the apply: the line follows the apply
        self._work = message.work
        self._doing = (message.doing, message.step, message.sent)
        self.query_one(WorkLine).working(f"{message.doing}: {message.step}")

    def on_work_ended(self, message: WorkEnded) -> None:
        if message.work is self._applying:
            self._applying = None
        if message.work is not self._work:
            return
        self._work = None
        if not message.work.cancel.is_set():
            self.query_one(WorkLine).ended()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_work":  # esc goes back as everywhere unless something runs here
            return self._work is not None
        return super().check_action(action, parameters)

    def action_cancel_work(self) -> None:
        work = self._work
        if work is None:
            return
        work.cancel.set()
        self.query_one(WorkLine).cancelled(cancelled_text(*self._doing))

    def action_toggle_cancel(self) -> None:
        if self.exercise is None:
            return
        inputs = self.exercise.ctx.inputs
        inputs["cancel"] = None if inputs.get("cancel") == "all-pending" else "all-pending"
        self.notify("pending owners of the dedicated queue " + ("will be cancelled" if inputs["cancel"] else "are kept"))
        self.reverify()

    def action_apply(self) -> None:
        exercise = self.exercise
        if exercise is None:
            self.notify(self.problem or "still verifying; try again in a moment", severity="warning")
            return
        current = next((s for s in self.last_statuses if s.state is not StepState.VERIFIED), None)
        if current is None:
            self.notify(f"every step of {exercise.flow.title} is verified")
            return
        step = current.step

        def preview() -> tuple[bool, str, bool]:
            work = WizardWork()
            self.post_message(WorkProgress(work, "previewing", step.title))
            try:
                p = exercise.preview(step)
            finally:
                self.post_message(WorkEnded(work))
            if work.cancel.is_set():
                return False, f"the preview of '{step.title}' was stopped (esc): nothing was changed", False
            return p.dry_run_ok and p.refusal is None, p.text(), p.allowed

        def run(dry_run: bool) -> Any:
            if dry_run:
                p = exercise.preview(step)
                return p.allowed, p.text()
            work = WizardWork()
            self.post_message(WorkProgress(work, "applying", step.title))
            try:
                return applied(work)
            finally:
                self.post_message(WorkEnded(work))

        def applied(work: WizardWork) -> tuple[bool, str]:
            """Worker thread: the step sent, then waited for until it verifies (or esc stops the wait)."""
            try:
                ok, lines = exercise.apply(step)
            except Refused as err:
                return False, err.message
            if not ok:
                return False, "\n".join(lines)
            if work.cancel.is_set():
                check = Check(False, "verification stopped by the operator before it began")
            else:
                check = exercise.wait_verified(step, VERIFY_TIMEOUT, watched(self.post_message, work, tuple(lines)))
            exercise.record_step(step, "verified" if check.ok else "not verified", check, lines)
            self._finish_if_done(exercise, check)
            tail = "verified" if check.ok else f"NOT verified: {check.reason}" + (f"\n⚠ {check.action}" if check.action else "")
            return check.ok, "\n".join([*lines, f"{step.title}: {tail}"])

        def done(ok: bool, text: str) -> None:
            self._placed = False
            self.selected = None
            self.reverify()

        self.tau.request_mutation(Mutation(
            verb=f"multikueue {self.flow_name}", target=f"step {step.key}", title=f"Apply: {step.title}",
            run=run, preview=preview, on_done=done))

    def _finish_if_done(self, exercise: Exercise, check: Check) -> None:
        """Close the exercise as the CLI does: verified once every step is (the flow's on_complete runs:
        rotation forgets its keyring entries), not verified when the step just applied is not."""
        if not check.ok:
            exercise.finish(Outcome.NOT_VERIFIED)
            return
        if all(s.state is StepState.VERIFIED for s in exercise.survey()):
            exercise.finish(Outcome.VERIFIED)
