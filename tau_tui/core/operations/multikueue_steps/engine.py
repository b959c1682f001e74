"""The step engine behind the setup wizard, the drain/rollback checklist and
the rotation flow.  No Textual: the app and the CLI drive the same engine.

A flow is an ordered list of :class:`Step` s.  Each step explains itself,
lists the exact :class:`Change` s it would make (YAML, credentials redacted),
can refuse with a reason, is server-dry-run, applied on confirmation, and then
*verified live*: the engine polls ``verify`` until it holds or a timeout
passes, and reports the reason it does not.  A step is unlocked only when
every step before it verifies, and the state is always derived from the
cluster (plus the exercise record), so a flow resumes after a restart where
the cluster says it stands.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from tau_tui.core.cluster.kinds import ResourceType
from tau_tui.core.operations.multikueue_steps.access import AccessError, BackendAccess
from tau_tui.core.operations.multikueue_steps.credentials import REDACTED, CredentialError, WorkerCredential


def rejects_credential(exc: AccessError) -> bool:
    """A 401 is an answer about a credential (it does not work: a refusal); any other failure to ask the
    cluster (unreachable, forbidden to read, a server error) decides nothing: an error, never a refusal."""
    return exc.code == 401


class StepState(str, enum.Enum):
    VERIFIED = "verified"
    READY = "ready"  # the next step to do
    LOCKED = "locked"  # an earlier step does not verify yet
    REFUSED = "refused"
    FAILED = "failed"  # applied, and the promised condition did not arrive in time
    ERROR = "error"  # the cluster could not be asked
    ACTION = "action"  # not verified, and waiting will not change that: the operator must act (the reason says how)


MARKS = {StepState.VERIFIED: "✓", StepState.READY: "▶", StepState.LOCKED: "○", StepState.REFUSED: "✗",
         StepState.FAILED: "✗", StepState.ERROR: "?", StepState.ACTION: "⚠"}


@dataclass(frozen=True)
class Check:
    """A live verification: ``ok`` with the evidence, or the reason it does not hold."""

    ok: bool
    reason: str = ""
    evidence: tuple[str, ...] = ()
    #: What the operator must do by hand before this can verify (the step shows ⚠ and is not verified).
    action: str = ""


@dataclass(frozen=True)
class Change:
    """One object a step creates, patches or deletes, on the manager or a worker."""

    action: str  # create | patch | delete
    rt: ResourceType
    name: str
    namespace: str | None = None
    body: Mapping[str, Any] | None = None
    cluster: str = "manager"
    #: Shown instead of the body (a Secret's data, for example).
    redact: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.rt.kind} {where}{self.name}" + ("" if self.cluster == "manager" else f" on {self.cluster}")

    def shown_body(self) -> dict[str, Any]:
        body: dict[str, Any] = _plain(self.body or {})
        for path in self.redact:
            node: Any = body
            *parents, leaf = path.split(".")
            for part in parents:
                node = node.get(part) if isinstance(node, dict) else None
                if node is None:
                    break
            if isinstance(node, dict) and leaf in node:
                node[leaf] = REDACTED
        return body

    def yaml(self) -> str:
        head = f"# {self.action} {self.target}\n"
        if self.action == "delete":
            return head
        return head + yaml.safe_dump(self.shown_body(), sort_keys=False, default_flow_style=False)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class Refused(Exception):
    """A guard refuses the step; the message says why and what to do instead."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Cancelled(Exception):
    """The operator stopped a survey (esc in the wizard): no state is known from it."""

    def __init__(self, step: Step):
        super().__init__(f"stopped while verifying '{step.title}'")
        self.step = step


@dataclass
class StepWatch:
    """Who watches a survey or a wait for verification: told which step is being checked before each
    check (``doing`` says how: "verifying", "waiting for"), and asked after each whether to stop."""

    on_step: Callable[[Step, str], None] = lambda step, doing: None
    stop: Callable[[], bool] = lambda: False


class Step:
    """One step.  Subclasses fill in the five parts."""

    key: str = ""
    title: str = ""
    kind: str = ""  # credential, wiring, admission-check, queue, matrix, deauthorize, drain, wait, remove, revoke, rotate
    explanation: str = ""

    def changes(self, ctx: StepContext) -> list[Change]:
        return []

    def refusal(self, ctx: StepContext) -> str | None:
        """Why this step must not be applied now (None: go ahead)."""
        return None

    def verify(self, ctx: StepContext) -> Check:
        raise NotImplementedError

    def apply(self, ctx: StepContext, dry_run: bool) -> list[str]:
        """Make the changes (``dry_run``: server dry-run).  Returns one line per change."""
        return [apply_change(ctx, change, dry_run) for change in self.changes(ctx)]


def apply_change(ctx: StepContext, change: Change, dry_run: bool) -> str:
    access = ctx.cluster(change.cluster)
    suffix = " (server dry-run)" if dry_run else ""
    if change.action == "create":
        existing = access.get(change.rt, change.name, change.namespace)
        if existing is not None:
            return f"{change.target} exists; left as it is"
        access.create(change.rt, change.body or {}, change.namespace, dry_run)
        return f"create {change.target}: ok{suffix}"
    if change.action == "patch":
        access.patch(change.rt, change.name, change.body or {}, change.namespace, dry_run)
        return f"patch {change.target}: ok{suffix}"
    if change.action == "delete":
        gone = not access.delete(change.rt, change.name, change.namespace, dry_run)
        return f"{change.target} already gone" if gone else f"delete {change.target}: ok{suffix}"
    raise ValueError(change.action)


@dataclass
class StepContext:
    """What steps read: the manager, the worker connector, the plan, a clock to wait on."""

    manager: BackendAccess
    connector: Any  # WorkerConnector
    plan: Any  # MultiKueuePlan
    #: Wait this many seconds (time.sleep for a real cluster; world.advance in the simulation).
    wait: Callable[[float], None]
    #: Seconds on the clock ``wait`` moves (time.monotonic for a real cluster; the world's clock in the simulation).
    now: Callable[[], float] = time.monotonic
    default_queue: str = "jobqueue"
    keyring: Any = None  # CredentialVault (rotation)
    #: Inputs the operator gives while running (cancel choices, rotation's new credential).
    inputs: dict[str, Any] = field(default_factory=dict)
    #: The exercise record's evidence that must survive a restart (records.Recorder or records.RecordJournal).
    journal: Any = None
    _workers: dict[str, BackendAccess] = field(default_factory=dict)
    _credentials: dict[str, WorkerCredential] = field(default_factory=dict)

    def cluster(self, name: str) -> BackendAccess:
        if name == "manager":
            return self.manager
        return self.worker(name)

    def credential(self, worker: str) -> WorkerCredential:
        """The credential the plan names for ``worker`` (loaded and checked once)."""
        if worker not in self._credentials:
            wp = self.plan.worker(worker)
            self._credentials[worker] = self.connector.load(worker, wp.kubeconfig, wp.context)
        return self._credentials[worker]

    def worker_credential(self, name: str) -> WorkerCredential:
        """The credential ``worker`` reads with: the one stored on the manager, else the plan's."""
        from tau_tui.core.operations.multikueue_steps.access import SECRET
        from tau_tui.core.operations.multikueue_steps.credentials import credential_from_secret

        wp = self.plan.worker(name)
        stored = credential_from_secret(name, self.manager.get(SECRET, wp.secret_name, self.plan.kueue_namespace))
        return stored or self.credential(name)

    def worker(self, name: str) -> BackendAccess:
        """The worker reached with the credential stored on the manager (or the plan's, before it is stored)."""
        if name not in self._workers:
            self._workers[name] = self.connector.connect(self.worker_credential(name))
        return self._workers[name]

    def inspector(self, name: str) -> BackendAccess:
        """Who reads the dependency matrix: the owner's admin context when the plan names one."""
        wp = self.plan.worker(name)
        if wp is not None and wp.admin_context:
            key = f"admin:{name}"
            if key not in self._workers:
                self._workers[key] = self.connector.admin(wp.admin_context)
            return self._workers[key]
        return self.worker(name)

    def forget_workers(self) -> None:
        self._workers.clear()


class Deadline:
    """A time budget on the context's clock.  Each wait lasts at least the seconds asked, so the seconds
    waited bound the elapsed time from below too: a clock that does not move with ``wait`` (the real clock
    over a simulated wait) cannot make a loop run on."""

    def __init__(self, ctx: StepContext, seconds: float):
        self.ctx = ctx
        self.seconds = seconds
        self.start = ctx.now()
        self.waited = 0.0

    def elapsed(self) -> float:
        return max(self.ctx.now() - self.start, self.waited)

    def wait(self, poll: float) -> bool:
        """Wait ``poll`` seconds, or what is left of the budget; False (and no wait) once it is spent."""
        left = self.seconds - self.elapsed()
        if left <= 0:
            return False
        step = min(poll, left)
        self.ctx.wait(step)
        self.waited += step
        return True


@dataclass(frozen=True)
class StepStatus:
    step: Step
    state: StepState
    check: Check

    @property
    def mark(self) -> str:
        return MARKS[self.state]


@dataclass(frozen=True)
class Preview:
    step: Step
    changes: tuple[Change, ...]
    refusal: str | None
    dry_run: tuple[str, ...]
    dry_run_ok: bool
    #: The cluster could not be asked (unreachable, forbidden): nothing can be decided, not a refusal.
    error: str | None = None

    @property
    def allowed(self) -> bool:
        return self.refusal is None and self.error is None and self.dry_run_ok

    def text(self) -> str:
        lines = [self.step.title, "", self.step.explanation, ""]
        if self.error:
            lines += [f"? ERROR: the cluster could not be asked: {self.error}", ""]
        if self.refusal:
            lines += [f"✗ REFUSED: {self.refusal}", ""]
        lines += [c.yaml() for c in self.changes] or ["(no objects change in this step)"]
        if self.dry_run:
            lines += ["", "server dry-run:" if self.dry_run_ok else "⚠ server dry-run FAILED:"]
            lines += [f"  {line}" for line in self.dry_run]
        return "\n".join(lines)


class Outcome(str, enum.Enum):
    """How a headless run ended (the CLI's exit code per outcome)."""

    VERIFIED = "verified"
    REFUSED = "refused"
    NOT_VERIFIED = "not-verified"
    DECLINED = "declined"
    FAILED = "failed"


@dataclass
class Flow:
    name: str  # setup | drain | rotate
    title: str
    steps: list[Step]
    #: Runs once every step verified (rotation forgets its keyring entries here).
    on_complete: Callable[[StepContext], None] | None = None
    #: What a verified run verified, in a few words (rotation: the fingerprints), for the verdict line.
    summary: Callable[[StepContext], str] | None = None


class Exercise:
    """Drives one flow against the cluster and writes the exercise record."""

    def __init__(self, flow: Flow, ctx: StepContext, recorder: Any = None, *, poll_seconds: float = 2.0):
        self.flow = flow
        self.ctx = ctx
        self.recorder = recorder
        self.poll_seconds = poll_seconds
        #: Why this exercise may apply nothing: the identity its record must name could not be read.
        self.unidentified = ""

    def _check(self, step: Step) -> tuple[Check, StepState]:
        try:
            check = step.verify(self.ctx)
        except (AccessError, CredentialError) as exc:
            return Check(False, exc.message), StepState.ERROR
        except Refused as exc:
            return Check(False, exc.message), StepState.REFUSED
        return check, (StepState.VERIFIED if check.ok else StepState.ACTION if check.action else StepState.READY)

    def survey(self, watch: StepWatch | None = None) -> list[StepStatus]:
        """Every step's state from the cluster now: verified steps, the first
        that is not (ready), and the locked ones after it.  ``watch`` is told each step as it is
        checked; when it says stop, :class:`Cancelled` is raised after that step (a part of a survey
        says nothing of the steps after it)."""
        out: list[StepStatus] = []
        blocked = False
        for step in self.flow.steps:
            if blocked:
                out.append(StepStatus(step, StepState.LOCKED, Check(False, "an earlier step does not verify yet")))
                continue
            if watch is not None:
                watch.on_step(step, "verifying")
            check, state = self._check(step)
            if watch is not None and watch.stop():
                raise Cancelled(step)
            if state is not StepState.VERIFIED:
                blocked = True
                if state is StepState.READY:
                    try:
                        why = step.refusal(self.ctx)
                    except AccessError as exc:
                        if not rejects_credential(exc):
                            state, check, why = StepState.ERROR, Check(False, exc.message, check.evidence), None
                        else:
                            why = exc.message
                    except CredentialError as exc:
                        why = exc.message
                    if why:
                        state, check = StepState.REFUSED, Check(False, why, check.evidence)
            out.append(StepStatus(step, state, check))
        return out

    def current(self, statuses: Sequence[StepStatus] | None = None) -> StepStatus | None:
        return next((s for s in statuses or self.survey() if s.state is not StepState.VERIFIED), None)

    def unlocked(self, step: Step) -> bool:
        for status in self.survey():
            if status.step is step:
                return status.state is not StepState.LOCKED
        return False

    def preview(self, step: Step) -> Preview:
        try:
            refusal = step.refusal(self.ctx)
        except AccessError as exc:
            if not rejects_credential(exc):
                return Preview(step, (), None, (), False, error=exc.message)
            refusal = exc.message
        except CredentialError as exc:
            refusal = exc.message
        try:
            changes = tuple(step.changes(self.ctx))
        except (AccessError, CredentialError, Refused) as exc:
            return Preview(step, (), refusal or exc.message, (), False)
        if refusal:
            return Preview(step, changes, refusal, (), False)
        try:
            lines = tuple(step.apply(self.ctx, True))
            ok = True
        except (AccessError, CredentialError) as exc:
            lines, ok = (exc.message,), False
        except Refused as exc:
            return Preview(step, changes, exc.message, (), False)
        return Preview(step, changes, None, lines, ok)

    def apply(self, step: Step) -> tuple[bool, list[str]]:
        """Apply after confirmation.  Refuses again if a guard now says no."""
        if self.unidentified:
            raise Refused(self.unidentified)
        if not self.unlocked(step):
            raise Refused(f"step '{step.title}' is locked: an earlier step does not verify yet")
        why = step.refusal(self.ctx)
        if why:
            raise Refused(why)
        try:
            lines = step.apply(self.ctx, False)
        except (AccessError, CredentialError) as exc:
            self.record_step(step, "apply failed", Check(False, exc.message))
            return False, [exc.message]
        except Refused as exc:
            self.record_step(step, "refused", Check(False, exc.message))
            raise
        self.ctx.forget_workers()
        return True, lines

    def wait_verified(self, step: Step, timeout: float, watch: StepWatch | None = None) -> Check:
        """Poll ``verify`` every ``poll_seconds`` until it holds or ``timeout`` has passed on the context's
        clock (the time ``verify`` itself takes counts too).  ``watch`` is told before each check and
        may stop the wait between checks: the step is then not verified, and says so."""
        deadline = Deadline(self.ctx, timeout)
        if watch is not None:
            watch.on_step(step, "waiting for")
        check, _ = self._check(step)
        while not (check.ok or check.action):  # waiting does not do what only the operator can
            if watch is not None and watch.stop():
                return Check(False, f"verification stopped by the operator after {deadline.elapsed():.0f} s "
                                    f"(last check: {check.reason})", check.evidence)
            if not deadline.wait(self.poll_seconds):
                break
            if watch is not None:
                watch.on_step(step, "waiting for")
            check, _ = self._check(step)
        if not check.ok and not check.action:
            check = Check(False, f"not verified within {timeout:g} s: {check.reason}", check.evidence)
        return check

    def record_step(self, step: Step, result: str, check: Check, applied: Sequence[str] = ()) -> None:
        if self.recorder is not None:
            self.recorder.step(step, result, check, applied)

    def run_step(self, step: Step, confirm: Callable[[Preview], bool], timeout: float) -> Outcome:
        check, state = self._check(step)
        if state is StepState.VERIFIED:
            self.record_step(step, "already verified", check)
            return Outcome.VERIFIED
        if state is StepState.ERROR:
            self.record_step(step, "error", check)
            return Outcome.FAILED
        preview = self.preview(step)
        if preview.error:
            self.record_step(step, "error", Check(False, preview.error))
            return Outcome.FAILED
        if preview.refusal:
            self.record_step(step, "refused", Check(False, preview.refusal))
            return Outcome.REFUSED
        if not preview.dry_run_ok:
            self.record_step(step, "server dry-run failed", Check(False, "; ".join(preview.dry_run)))
            return Outcome.FAILED
        if not confirm(preview):
            self.record_step(step, "declined", Check(False, "the operator did not confirm"))
            return Outcome.DECLINED
        try:
            ok, lines = self.apply(step)
        except Refused as exc:
            self.record_step(step, "refused", Check(False, exc.message))
            return Outcome.REFUSED
        if not ok:
            return Outcome.FAILED
        check = self.wait_verified(step, timeout)
        self.record_step(step, "verified" if check.ok else "not verified", check, lines)
        return Outcome.VERIFIED if check.ok else Outcome.NOT_VERIFIED

    def run(self, confirm: Callable[[Preview], bool], timeout: float = 120.0) -> Outcome:
        """Headless: from the first step that does not verify, to the end or the first failure."""
        if self.unidentified:  # nothing is applied, and the record cannot end verified
            self.record_step(self.flow.steps[0], "error", Check(False, self.unidentified))
            self.finish(Outcome.FAILED)
            return Outcome.FAILED
        for status in self.survey():
            if status.state is StepState.VERIFIED:
                self.record_step(status.step, "already verified", status.check)
                continue
            outcome = self.run_step(status.step, confirm, timeout)
            if outcome is not Outcome.VERIFIED:
                self.finish(outcome)
                return outcome
        self.finish(Outcome.VERIFIED)
        return Outcome.VERIFIED

    def finish(self, outcome: Outcome) -> None:
        if outcome is Outcome.VERIFIED and self.unidentified:
            outcome = Outcome.FAILED  # a record that cannot name who ran it never ends verified
        if outcome is Outcome.VERIFIED and self.flow.on_complete is not None:
            self.flow.on_complete(self.ctx)
        if self.recorder is not None:
            self.recorder.finish(outcome.value)
