"""The app's mutation flow: preview (server dry-run) → confirm → apply → audit, refused in --readonly.

Screens ask through :class:`tau_tui.screens.host.PaneHost` (``app.request_mutation``); the app
hands the request here and the messages this flow posts back (``@on`` handlers on the app) too.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text

from tau_tui.app_components.shell import run_in_thread
from tau_tui.app_messages import MutationApplied, MutationBlocked, MutationPreviewed
from tau_tui.mutations.mutation import Mutation, describe_result
from tau_tui.widgets.confirm_dialog import ConfirmDialog

if TYPE_CHECKING:
    from tau_tui.app_components.shell import AppShell


#: How much of a failed preview the second confirmation quotes.
FAILURE_CHARS = 600


def failure_of(preview_text: str) -> str:
    """The failure a preview reports: from its last "⚠" on (the server dry-run's own words), else its end."""
    at = preview_text.rfind("⚠")
    failure = preview_text[at:] if at >= 0 else "\n".join(preview_text.strip().splitlines()[-4:])
    failure = failure.strip()
    return failure if len(failure) <= FAILURE_CHARS else failure[:FAILURE_CHARS - 1] + "…"


class MutationFlow:
    """Previews, confirms, applies and audits every change the panes ask for."""

    def __init__(self, app: AppShell) -> None:
        self.app = app

    def request(self, mutation: Mutation) -> None:
        """Preview (server dry-run) → confirm → apply → audit.  Refused in --readonly."""
        app = self.app
        if app.readonly:
            self.block(mutation.verb, mutation.target)
            return
        if app.backend is None:
            app.notify("no cluster connected", severity="error")
            return
        run_in_thread(app, partial(self._preview, mutation), group="mutation", exclusive=False)

    def block(self, verb: str, target: str) -> None:
        app = self.app
        app.notify(f"read-only mode: {verb} {target} is disabled ({app.readonly_reason})", severity="warning")
        app.post_message(MutationBlocked(verb, target))
        self._audit_in_thread("refused", verb, target, ok=False, message=f"refused: read-only mode ({app.readonly_reason})",
                              readonly_blocked=True)

    def write_audit(self, phase: str, verb: str, target: str, *, ok: bool | None, message: str,
                    namespace: str | None = None, dry_run: bool = False, readonly_blocked: bool = False) -> str | None:
        """One audit entry with the Kubernetes identity (worker threads only: it may ask
        the server).  Returns why it could not be written, or None."""
        backend = self.app.backend
        try:
            identity = backend.who_am_i() if backend is not None else None
        except Exception:  # the identity is a detail; the entry is what matters
            identity = None
        try:
            self.app.audit.append(verb, target, ok=ok, message=message, dry_run=dry_run, phase=phase,
                                  context=backend.current_context if backend else None, namespace=namespace,
                                  readonly_blocked=readonly_blocked, identity=identity)
        except OSError as err:
            return f"audit log not written: {err}"
        return None

    def _audit_in_thread(self, phase: str, verb: str, target: str, *, ok: bool | None, message: str,
                         namespace: str | None = None, readonly_blocked: bool = False) -> None:
        def audit() -> None:
            problem = self.write_audit(phase, verb, target, ok=ok, message=message, namespace=namespace,
                                       readonly_blocked=readonly_blocked)
            if problem:
                self.app.call_from_thread(self.app.notify, problem, severity="error")

        run_in_thread(self.app, audit, group="audit", exclusive=False)

    def _preview(self, mutation: Mutation) -> None:
        """Worker thread."""
        affects = ""
        if mutation.affected is not None:
            try:
                affects = "affects:\n" + "".join(f"  {line}\n" for line in mutation.affected()) + "\n"
            except Exception as err:  # the summary is a help; the dry-run below still decides
                affects = f"affects: unknown ({type(err).__name__}: {err})\n\n"
        self._preview_text(mutation, affects)

    def _preview_text(self, mutation: Mutation, affects: str) -> None:
        if mutation.preview is not None:
            try:
                ok, text, allowed = mutation.preview()
            except Exception as err:
                ok, text, allowed = False, f"⚠ preview failed: {getattr(err, 'message', None) or err}", False
            text = affects + text
            self.write_audit("preview", mutation.verb, mutation.target, ok=ok, message=text,
                             namespace=mutation.namespace, dry_run=True)
            self.app.post_message(MutationPreviewed(mutation, ok, text, allowed))
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
        self.app.post_message(MutationPreviewed(mutation, ok, text))

    def previewed(self, message: MutationPreviewed) -> None:
        """UI thread: the preview is shown to confirm (or, refused, only shown)."""
        mutation = message.mutation
        preview = Text(f"{mutation.verb} {mutation.target}\n\n{message.text}")
        if not message.allowed:
            self.app.push_screen(ConfirmDialog(f"{mutation.verb.capitalize()} {mutation.target}: refused", preview,
                                               verb=mutation.verb.capitalize(), can_confirm=False))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                run_in_thread(self.app, partial(self._apply, mutation), group="mutation", exclusive=False)
            else:
                self.app.notify(f"{mutation.verb} {mutation.target}: not done")
                self._audit_in_thread("declined", mutation.verb, mutation.target, ok=False,
                                      message="declined at the confirmation", namespace=mutation.namespace)

        verb = mutation.verb.capitalize()
        if message.ok:
            self.app.push_screen(ConfirmDialog(mutation.title, preview, verb=verb, decline=mutation.decline), answered)
            return

        # The preview failed (a server dry-run FAILED): going on takes a second, explicit yes on
        # another key, in a dialog that names the failure.
        def first_answer(yes: bool | None) -> None:
            if not yes:
                answered(False)
                return
            failure = failure_of(message.text)
            self.app.push_screen(ConfirmDialog(
                f"{verb} {mutation.target} although its preview failed?",
                Text(f"The preview of this {mutation.verb} failed:\n\n{failure}\n\nThe server may refuse it, or do "
                     f"what the preview could not show. {verb} anyway?"),
                verb=f"{verb} anyway", decline=mutation.decline, confirm_key="a"), answered)

        self.app.push_screen(ConfirmDialog(mutation.title, preview, verb=f"{verb} despite the failure…",
                                           decline=mutation.decline), first_answer)

    def _apply(self, mutation: Mutation) -> None:
        """Worker thread."""
        # The intent is on disk before the call: a crash mid-call still leaves a trace.
        problem = self.write_audit("intent", mutation.verb, mutation.target, ok=None, message="confirmed; applying",
                                   namespace=mutation.namespace)
        if problem:  # no trace, no change
            self.app.post_message(MutationApplied(mutation, False, f"{mutation.verb} not done: {problem}"))
            return
        try:
            ok, text = describe_result(mutation.run(False))
        except Exception as err:
            ok, text = False, f"{mutation.verb} failed: {getattr(err, 'message', None) or err}"
        problem = self.write_audit("outcome", mutation.verb, mutation.target, ok=ok, message=text,
                                   namespace=mutation.namespace)
        if problem:
            text += f"\n({problem})"
        self.app.post_message(MutationApplied(mutation, ok, text))

    def applied(self, message: MutationApplied) -> None:
        """UI thread: the outcome is said, the screen that asked is told, and every pane reads again."""
        self.app.notify(message.text, title=f"{message.mutation.verb} {'done' if message.ok else 'FAILED'}",
                        severity="information" if message.ok else "error", timeout=8)
        if message.mutation.on_done is not None:
            message.mutation.on_done(message.ok, message.text)
        self.app.refresh_tick()
