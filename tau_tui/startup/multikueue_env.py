"""Where the MultiKueue wizard gets its worker connector, plans, keyring and clock.

* the embedded demo (a simulated manager with a worker fleet): the fleet's
  connector, without a plan file the demo's built-in plans (setup, rotation,
  drain: ``demo_fleet.demo_plan``), and the demo's in-memory keyring, which says
  so on screen ("demo keyring, in memory: nothing is stored");
* a real cluster: the owner's kubeconfig contexts, the plan named by
  ``:mk setup PLAN``, ``multikueue_plan`` in config.yaml, or
  ``$XDG_CONFIG_HOME/tau-tui/multikueue-plan.yaml``, and the OS keyring (the
  flows that need one refuse without it; nothing falls back to memory).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan, load_plan
from tau_tui.core.operations.multikueue_steps.rotate import CredentialVault
from tau_tui.core.runconfig.diagnostics import DiagnosticError

DEFAULT_PLAN_NAME = "multikueue-plan.yaml"
#: The flows that keep a credential in a keyring while it is in flight.
KEYRING_FLOWS = ("rotate", "drain")


@dataclass
class MultiKueueEnvironment:
    connector: Any
    plan: MultiKueuePlan | None
    wait: Callable[[float], None]
    #: Why there is no plan (shown by the wizard instead of the steps).
    problem: str = ""
    #: The demo's plan for a flow (read when the flow opens); None: ``plan`` for every flow.
    demo_plans: Callable[[str], MultiKueuePlan] | None = None
    #: The demo's in-memory keyring; None: the OS keyring.
    demo_keyring: Any = None
    #: The clock of the exercise records: the demo's simulated one (its times match its cluster's); None: now.
    clock: Callable[[], datetime] | None = None

    def plan_for(self, flow: str) -> MultiKueuePlan | None:
        if self.demo_plans is not None and self.plan is not None:
            return self.demo_plans(flow)
        return self.plan

    def vault_for(self, flow: str, cluster: str) -> CredentialVault | None:
        """Where ``flow`` keeps credentials in flight (None: it keeps none)."""
        if flow not in KEYRING_FLOWS:
            return None
        return CredentialVault(cluster, store=self.demo_keyring)

    def keyring_note(self, flow: str) -> str:
        """What the screen says about the keyring of ``flow``: only the demo's needs saying."""
        return self.demo_keyring.DESCRIPTION if self.demo_keyring is not None and flow in KEYRING_FLOWS else ""


def environment_for(backend: Any, plan_path: str | None, config_dir: Path) -> MultiKueueEnvironment:
    fleet = getattr(getattr(getattr(backend, "world", None), "multikueue", None), "fleet", None)
    if fleet is not None:
        from tau_tui.core.cluster.clock import ManualClock
        from tau_tui.core.operations.multikueue_steps.demo_fleet import demo_keyring, demo_plan
        from tau_tui.core.operations.multikueue_steps.simulated_fleet import SimFleetConnector, lab_plan

        world = backend.world
        wait = world.advance if isinstance(world.clock, ManualClock) else time.sleep
        connector: Any = SimFleetConnector(fleet)
        keyring = demo_keyring(fleet)
        if not plan_path:
            if keyring is None:  # a lab fleet without the demo's plans (tests build one)
                return MultiKueueEnvironment(connector, lab_plan(fleet.workers), wait)
            return MultiKueueEnvironment(connector, demo_plan("setup", world, fleet), wait,
                                         demo_plans=lambda flow: demo_plan(flow, world, fleet), demo_keyring=keyring,
                                         clock=world.now)
    else:
        from tau_tui.core.operations.multikueue_steps.credentials import KubeconfigConnector

        connector, wait, keyring = KubeconfigConnector(), time.sleep, None
    path = Path(plan_path) if plan_path else config_dir / DEFAULT_PLAN_NAME
    if not path.exists():
        return MultiKueueEnvironment(connector, None, wait,
                                     f"no MultiKueue plan: write {path} (see docs/multikueue.md) or run :mk setup PLAN_FILE",
                                     demo_keyring=keyring)
    try:
        return MultiKueueEnvironment(connector, load_plan(path), wait, demo_keyring=keyring)
    except DiagnosticError as err:
        return MultiKueueEnvironment(connector, None, wait, str(err), demo_keyring=keyring)
