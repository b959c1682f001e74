"""Where the MultiKueue wizard gets its worker connector, plan and clock.

* the embedded demo (a simulated manager with a worker fleet): the fleet's
  connector and, without a plan file, the lab plan that fits it;
* a real cluster: the owner's kubeconfig contexts and the plan named by
  ``:mk setup PLAN``, ``multikueue_plan`` in config.yaml, or
  ``$XDG_CONFIG_HOME/tau-tui/multikueue-plan.yaml``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_tui.core.operations.multikueue_steps.plan import MultiKueuePlan, load_plan
from tau_tui.core.runconfig.diagnostics import DiagnosticError

DEFAULT_PLAN_NAME = "multikueue-plan.yaml"


@dataclass
class MultiKueueEnvironment:
    connector: Any
    plan: MultiKueuePlan | None
    wait: Callable[[float], None]
    #: Why there is no plan (shown by the wizard instead of the steps).
    problem: str = ""


def environment_for(backend: Any, plan_path: str | None, config_dir: Path) -> MultiKueueEnvironment:
    fleet = getattr(getattr(getattr(backend, "world", None), "multikueue", None), "fleet", None)
    if fleet is not None:
        from tau_tui.core.cluster.clock import ManualClock
        from tau_tui.core.operations.multikueue_steps.simulated_fleet import SimFleetConnector, lab_plan

        world = backend.world
        wait = world.advance if isinstance(world.clock, ManualClock) else time.sleep
        connector: Any = SimFleetConnector(fleet)
        if not plan_path:
            return MultiKueueEnvironment(connector, lab_plan(fleet.workers), wait)
    else:
        from tau_tui.core.operations.multikueue_steps.credentials import KubeconfigConnector

        connector, wait = KubeconfigConnector(), time.sleep
    path = Path(plan_path) if plan_path else config_dir / DEFAULT_PLAN_NAME
    if not path.exists():
        return MultiKueueEnvironment(connector, None, wait,
                                     f"no MultiKueue plan: write {path} (see docs/multikueue.md) or run :mk setup PLAN_FILE")
    try:
        return MultiKueueEnvironment(connector, load_plan(path), wait)
    except DiagnosticError as err:
        return MultiKueueEnvironment(connector, None, wait, str(err))
