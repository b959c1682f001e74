"""The app's mutation flow: preview (server dry-run) → confirm → apply → audit, refused in --readonly.

A part of :class:`tau_tui.app.TauApp`: the app shell inherits it, so screens keep calling
``app.request_mutation`` through :class:`tau_tui.screens.host.PaneHost`.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import on, work
from textual.app import App
from textual.message import Message

from tau_tui.core.cluster.interfaces import ClusterBackend
from tau_tui.core.operations.audit import AuditLog
from tau_tui.mutations.mutation import Mutation, describe_result
from tau_tui.widgets.confirm_dialog import ConfirmDialog


class MutationFlow(App):
    """Previews, confirms, applies and audits every change the panes ask for."""

    # Set by the app shell (TauApp.__init__ and its backend workers).
    backend: ClusterBackend | None
    audit: AuditLog
    readonly: bool
    readonly_reason: str
    #: The app shell's refresh tick, run once a change is applied so every pane shows it.
    _tick: Callable[[], None]

    class MutationPreviewed(Message):
        def __init__(self, mutation: Mutation, ok: bool, text: str, allowed: bool = True) -> None:
            super().__init__()
            self.mutation = mutation
            self.ok = ok
            self.text = text
            self.allowed = allowed

    class MutationApplied(Message):
        def __init__(self, mutation: Mutation, ok: bool, text: str) -> None:
            super().__init__()
            self.mutation = mutation
            self.ok = ok
            self.text = text

    class MutationBlocked(Message):
        def __init__(self, verb: str, target: str) -> None:
            super().__init__()
            self.verb = verb
            self.target = target

    def request_mutation(self, mutation: Mutation) -> None:
        """Preview (server dry-run) → confirm → apply → audit.  Refused in --readonly."""
        if self.readonly:
            self.block_mutation(mutation.verb, mutation.target)
            return
        if self.backend is None:
            self.notify("no cluster connected", severity="error")
            return
        self._preview_mutation(mutation)

    def block_mutation(self, verb: str, target: str) -> None:
        self.notify(f"read-only mode: {verb} {target} is disabled ({self.readonly_reason})", severity="warning")
        self.post_message(self.MutationBlocked(verb, target))
        self._audit_worker("refused", verb, target, ok=False, message=f"refused: read-only mode ({self.readonly_reason})",
                           readonly_blocked=True)

    def write_audit(self, phase: str, verb: str, target: str, *, ok: bool | None, message: str,
                    namespace: str | None = None, dry_run: bool = False, readonly_blocked: bool = False) -> str | None:
        """One audit entry with the Kubernetes identity (worker threads only: it may ask
        the server).  Returns why it could not be written, or None."""
        backend = self.backend
        try:
            identity = backend.who_am_i() if backend is not None else None
        except Exception:  # the identity is a detail; the entry is what matters
            identity = None
        try:
            self.audit.append(verb, target, ok=ok, message=message, dry_run=dry_run, phase=phase,
                              context=backend.current_context if backend else None, namespace=namespace,
                              readonly_blocked=readonly_blocked, identity=identity)
        except OSError as err:
            return f"audit log not written: {err}"
        return None

    @work(thread=True, exit_on_error=False, group="audit")
    def _audit_worker(self, phase: str, verb: str, target: str, *, ok: bool | None, message: str,
                      namespace: str | None = None, readonly_blocked: bool = False) -> None:
        problem = self.write_audit(phase, verb, target, ok=ok, message=message, namespace=namespace,
                                   readonly_blocked=readonly_blocked)
        if problem:
            self.call_from_thread(self.notify, problem, severity="error")

    @work(thread=True, exit_on_error=False, group="mutation")
    def _preview_mutation(self, mutation: Mutation) -> None:
        affects = ""
        if mutation.affected is not None:
            try:
                affects = "affects:\n" + "".join(f"  {line}\n" for line in mutation.affected()) + "\n"
            except Exception as err:  # the summary is a help; the dry-run below still decides
                affects = f"affects: unknown ({type(err).__name__}: {err})\n\n"
        self._preview_mutation_text(mutation, affects)

    def _preview_mutation_text(self, mutation: Mutation, affects: str) -> None:
        if mutation.preview is not None:
            try:
                ok, text, allowed = mutation.preview()
            except Exception as err:
                ok, text, allowed = False, f"⚠ preview failed: {getattr(err, 'message', None) or err}", False
            text = affects + text
            self.write_audit("preview", mutation.verb, mutation.target, ok=ok, message=text,
                             namespace=mutation.namespace, dry_run=True)
            self.post_message(self.MutationPreviewed(mutation, ok, text, allowed))
            return
        if mutation.server_dry_run:
            try:
                ok, text = describe_result(mutation.run(True))
                text = ("server dry-run passed:\n" if ok else "⚠ server dry-run FAILED:\n") + text
            except Exception as err:
                ok, text = False, f"⚠ server dry-run failed: {getattr(err, 'message', None) or err}"
        else:
            ok, text = True, "this change cannot be previewed by the server; it applies directly"
        text = affects + text
        self.write_audit("preview", mutation.verb, mutation.target, ok=ok, message=text,
                         namespace=mutation.namespace, dry_run=True)
        self.post_message(self.MutationPreviewed(mutation, ok, text))

    @on(MutationPreviewed)
    def _on_previewed(self, message: MutationPreviewed) -> None:
        mutation = message.mutation
        preview = Text(f"{mutation.verb} {mutation.target}\n\n{message.text}")
        if not message.allowed:
            self.push_screen(ConfirmDialog(f"{mutation.verb.capitalize()} {mutation.target}: refused", preview,
                                           verb=mutation.verb.capitalize(), can_confirm=False))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._apply_mutation(mutation)
            else:
                self.notify(f"{mutation.verb} {mutation.target}: not done")
                self._audit_worker("declined", mutation.verb, mutation.target, ok=False,
                                   message="declined at the confirmation", namespace=mutation.namespace)

        self.push_screen(ConfirmDialog(mutation.title, preview, verb=mutation.verb.capitalize(),
                                       decline=mutation.decline), answered)

    @work(thread=True, exit_on_error=False, group="mutation")
    def _apply_mutation(self, mutation: Mutation) -> None:
        # The intent is on disk before the call: a crash mid-call still leaves a trace.
        problem = self.write_audit("intent", mutation.verb, mutation.target, ok=None, message="confirmed; applying",
                                   namespace=mutation.namespace)
        if problem:  # no trace, no change
            self.post_message(self.MutationApplied(mutation, False, f"{mutation.verb} not done: {problem}"))
            return
        try:
            ok, text = describe_result(mutation.run(False))
        except Exception as err:
            ok, text = False, f"{mutation.verb} failed: {getattr(err, 'message', None) or err}"
        problem = self.write_audit("outcome", mutation.verb, mutation.target, ok=ok, message=text,
                                   namespace=mutation.namespace)
        if problem:
            text += f"\n({problem})"
        self.post_message(self.MutationApplied(mutation, ok, text))

    @on(MutationApplied)
    def _on_applied(self, message: MutationApplied) -> None:
        self.notify(message.text, title=f"{message.mutation.verb} {'done' if message.ok else 'FAILED'}",
                    severity="information" if message.ok else "error", timeout=8)
        if message.mutation.on_done is not None:
            message.mutation.on_done(message.ok, message.text)
        self._tick()
