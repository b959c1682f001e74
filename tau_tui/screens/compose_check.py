"""What the Compose pane's validation finds (run in its worker thread): the loader's diagnostics,
the profiles and why each is left out, the rendered manifests and the quota warnings.

The profiles come from a snapshot the file names, else the live ``TauCluster/cluster``.  Until the
cluster is connected and the TauCluster view has listed, the form says it waits for them (not "no
cluster connected"), and :meth:`ComposeCheck.profile_key` tells the pane when what the profiles
came from moved, so that it validates again then.  A profile's applicability is checked against the
namespace, team and lane the form shows, even when another field makes the file invalid: a reason
then names the field that is really wrong, never "the namespace is not set" for a set namespace."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.operations.admission_fit import quota_warnings, request_totals, summary_line
from tau_tui.core.runconfig.diagnostics import Diagnostic, DiagnosticError
from tau_tui.core.runconfig.loader import load_config_text
from tau_tui.core.runconfig.manifests import to_yaml
from tau_tui.core.runconfig.pipeline import render_run, snapshot_path
from tau_tui.core.runconfig.profiles import (
    MULTIKUEUE_TARGET,
    Caller,
    ProfileSet,
    explain,
    load_snapshot,
    profile_set_from_taucluster,
)
from tau_tui.core.runconfig.resolve import RenderOptions
from tau_tui.screens.compose_form import QUOTA_FIELDS, Validation
from tau_tui.screens.host import PaneHost

#: What the form says while the profiles are on their way.
WAITING = "waiting for TauCluster/cluster…"


@dataclass(frozen=True)
class FormPolicy:
    """The namespace, team and lane the form shows (text; None when empty)."""

    namespace: str | None
    team: str | None
    lane: str | None


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def form_policy(get: Any) -> FormPolicy:
    """From a document's ``get`` (canonical path → value)."""
    return FormPolicy(_text(get("policy.namespace")), _text(get("policy.team")), _text(get("policy.lane")))


class ComposeCheck:
    """The validation of one document text, against the host's cluster and settings."""

    def __init__(self, host: PaneHost) -> None:
        self.host = host

    def profile_key(self) -> tuple:
        """What the live profiles come from, as cache reads (no network): the backend, the
        TauCluster kind's generation and its view's state.  A validation made for another key is stale."""
        backend = self.host.backend
        if backend is None:
            return ("no backend",)
        try:
            return (id(backend), backend.generation(ResourceKind.TAU_CLUSTER),
                    backend.view_state(ResourceKind.TAU_CLUSTER).status)
        except Exception as err:  # a backend closing: read again at the next tick
            return (id(backend), "unreadable", type(err).__name__)

    def profile_set(self, loaded: Any) -> tuple[ProfileSet | None, str, bool]:
        """(profiles, where from or why none, whether they are still on their way)."""
        if loaded is not None:
            snapshot = snapshot_path(loaded, None)
            if snapshot is not None:
                return load_snapshot(snapshot), f"snapshot {snapshot}", False
        backend = self.host.backend
        if backend is None:
            return None, f"{WAITING} (connecting to the cluster)", True
        state = backend.view_state(ResourceKind.TAU_CLUSTER)
        tau_cluster = backend.tau_cluster()
        if tau_cluster is not None:
            return (profile_set_from_taucluster(dict(tau_cluster.raw)),
                    f"TauCluster/cluster generation {tau_cluster.generation}", False)
        if state.status is ViewStatus.SYNCING:
            return None, f"{WAITING} (its first list is still coming in)", True
        if state.status is ViewStatus.READY:
            return None, "no TauCluster/cluster in this cluster (TauGrid not set up?)", False
        return None, f"no TauCluster/cluster: {state.message or state.status.value}", False

    def check(self, text: str, label: str, base_dir: Path, policy: FormPolicy) -> Validation:
        result = Validation(False, text=text, profile_key=self.profile_key())
        loaded = None
        try:
            loaded = load_config_text(text, label, base_dir)
            result.diagnostics += loaded.warnings
        except DiagnosticError as err:
            result.diagnostics += err.diagnostics
        try:
            profile_set, source, result.waiting = self.profile_set(loaded)
        except DiagnosticError as err:
            profile_set, source = None, "; ".join(str(d) for d in err.diagnostics)
        result.profile_source = source
        settings = self.host.settings
        if profile_set is not None:
            if loaded is not None:  # as the renderer reads them
                config = loaded.config.policy
                policy = FormPolicy(config.namespace, config.team, config.lane)
            caller = Caller(policy.namespace or self.host.namespace_name,
                            policy.team or settings.team or os.environ.get("TAU_TEAM"),
                            policy.lane or settings.lane)
            for item in explain(profile_set, caller):
                shown = item.name + (" (MultiKueue, Alpha)" if item.profile.execution_target == MULTIKUEUE_TARGET else "")
                if item.selectable:
                    result.profile_options.append((f"✓ {shown}", item.name))
                else:
                    result.excluded.append((shown, "; ".join(item.reasons)))
        if loaded is not None and profile_set is not None:
            try:
                run = render_run(loaded, profile_set, RenderOptions(None, settings.team, settings.lane))
                result.diagnostics += run.resolution.warnings  # a MultiKueue profile with a data PVC, ...
                result.manifests = run.manifests
                result.manifests_yaml = to_yaml(run.manifests)
                result.submission_id = run.submission_id
                result.rendered = True
                self._check_quota(result, label, loaded.engine)
            except DiagnosticError as err:
                result.diagnostics += err.diagnostics
            except Exception as err:  # a renderer bug must not take the pane down
                result.diagnostics.append(Diagnostic(label, f"rendering failed: {type(err).__name__}: {err}"))
        result.ok = result.rendered and not any(d.severity == "error" for d in result.diagnostics)
        return result

    def _check_quota(self, result: Validation, label: str, engine: str) -> None:
        """Warn (next to the field) when no flavor of the queue's ClusterQueue can ever hold the request."""
        totals = request_totals(result.manifests)
        result.request_summary = summary_line(totals)
        backend = self.host.backend
        if backend is None:
            return
        result.quota_warnings = quota_warnings(totals, backend.local_queues(totals.namespace or None), backend.cluster_queues())
        for warning in result.quota_warnings:
            resource = warning.split(" ", 1)[0]
            path = QUOTA_FIELDS.get(resource) or ("compute.gpus" if engine == "job" else "compute.gpus_per_worker")
            result.diagnostics.append(Diagnostic(label, warning, path=path, severity="warning",
                                                 hint="ask for less, or pick a profile/queue with more quota"))
