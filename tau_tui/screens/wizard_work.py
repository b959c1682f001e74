"""The MultiKueue wizard's long actions (a survey of every step, a preview, an apply and its wait
for verification) as the screen sees them: each is a :class:`WizardWork` its thread reports on
(:class:`WorkProgress`: the step it is at and what it does there; :class:`WorkEnded`) and ``esc``
tells to stop (``WizardWork.cancel``).  A thread never touches a widget: it posts these."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from textual.message import Message

from tau_tui.core.operations.multikueue_steps.engine import Step, StepWatch


@dataclass(eq=False)
class WizardWork:
    """One long action; ``cancel`` is set by ``esc`` and read by the thread between its parts."""

    cancel: threading.Event = field(default_factory=threading.Event)


@dataclass
class WorkProgress(Message):
    """The action moved on: it ``doing`` (verifying, applying, waiting for …) step ``step``; ``sent``:
    what an apply already sent to the cluster."""

    work: WizardWork
    doing: str
    step: str
    sent: tuple[str, ...] = ()


@dataclass
class WorkEnded(Message):
    work: WizardWork


def watched(post: Callable[[Message], object], work: WizardWork, sent: tuple[str, ...] = ()) -> StepWatch:
    """A watch that reports each step to the screen and stops when ``esc`` said so."""

    def on_step(step: Step, doing: str) -> None:
        post(WorkProgress(work, doing, step.title, sent))

    return StepWatch(on_step=on_step, stop=work.cancel.is_set)


def cancelled_text(doing: str, step: str, sent: tuple[str, ...]) -> str:
    """What the screen says at once when ``esc`` stops an action: what is known, and what was sent."""
    if doing in ("verifying", "previewing", "reading the dependency matrix for"):
        return f"{doing} '{step}' stopped: nothing was changed; r verifies again"
    if doing == "applying":
        return (f"applying '{step}': the changes are being sent and will not be waited for; "
                "the step is not verified (the notification lists what was sent)")
    what = "; ".join(sent) or "the step's changes"
    return f"waiting for '{step}' stopped: sent {what}; the step is NOT verified; r verifies again"
