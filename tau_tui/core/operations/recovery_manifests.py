"""The objects of a retry or a resume: a failed run's Job or RayJob (and a multi-node Job's headless
Service) as it was submitted, renamed under a new submission id, with what must not carry over
removed (server-set fields, the Job controller's labels, what Kueue injected into the pod templates)
and the successor's annotations, environment and node anti-affinity added.  Pure over plain dicts;
:mod:`tau_tui.core.operations.recovery` decides, this module writes the objects."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from tau_tui.core.cluster.names import SUBMISSION_ID_LABEL, TAU_LABEL_PREFIX
from tau_tui.core.cluster.view_types import JobView, RayJobView

RETRIED_AS_ANNOTATION = f"{TAU_LABEL_PREFIX}retried-as"
RESUMED_AS_ANNOTATION = f"{TAU_LABEL_PREFIX}resumed-as"
AVOID_NODES_ANNOTATION = f"{TAU_LABEL_PREFIX}avoid-nodes"
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: The Job name is a label value (``job-name``): 63 characters; KubeRay's limit for a RayJob is 47.
NAME_LIMITS = {"Job": 63, "RayJob": 47}


def derived_name(base: str, suffix: str, kind: str) -> str:
    """``base-suffix`` within the kind's name limit; a long base is cut and made unique by a hash."""
    limit = NAME_LIMITS.get(kind, 63)
    name = f"{base}-{suffix}"
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(base.encode()).hexdigest()[:5]
    keep = limit - len(suffix) - len(digest) - 2
    return f"{base[:keep].rstrip('-')}-{digest}-{suffix}"


#: Fields the API server or the Job controller set: a resubmission must not carry them.
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "ownerReferences",
                    "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")
_JOB_CONTROLLER_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name")
#: What Kueue wrote into the pod templates when it started the failed run (its PodSetInfo: the
#: workload's name, the pod set label).  Copied into the successor they conflict with what Kueue
#: injects for the new Workload ("invalid admission check PodSetUpdate: conflict for annotations").
#: The topology requests the renderer wrote stay.
_KUEUE_PREFIX = "kueue.x-k8s.io/"
_KUEUE_KEPT = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology",
               "kueue.x-k8s.io/podset-unconstrained-topology", "kueue.x-k8s.io/queue-name",
               "kueue.x-k8s.io/priority-class")


def _without_kueue_injected(values: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in values.items() if not k.startswith(_KUEUE_PREFIX) or k in _KUEUE_KEPT}


def as_served(owner: JobView | RayJobView) -> dict[str, Any]:
    """A deep copy of the object with ``apiVersion`` and ``kind`` (the items of an API list carry neither)."""
    obj = copy.deepcopy(dict(owner.raw))
    obj.setdefault("apiVersion", owner.kind.type.api_version)
    obj.setdefault("kind", owner.kind.type.kind)
    return obj


def copy_of_live(owner: JobView | RayJobView) -> list[dict[str, Any]]:
    """The owner object as it was submitted (no status, no server-set fields), plus the headless
    Service a multi-node Job needs (``<name>-headless``, rebuilt from the pod template's subdomain)."""
    obj = as_served(owner)
    obj.pop("status", None)
    out = [obj]
    spec = obj.get("spec") or {}
    subdomain = ((spec.get("template") or {}).get("spec") or {}).get("subdomain")
    if obj.get("kind") == "Job" and subdomain:
        meta = obj.get("metadata") or {}
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k.startswith(TAU_LABEL_PREFIX)}
        out.insert(0, {"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": subdomain, "namespace": meta.get("namespace"), "labels": labels},
                       "spec": {"clusterIP": "None", "selector": {"job-name": meta.get("name")}}})
    return out


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.setdefault("spec", {})
    if obj.get("kind") == "Job":
        return [spec.setdefault("template", {})]
    if obj.get("kind") == "RayJob":
        rcs = spec.get("rayClusterSpec") or {}
        groups = [rcs.get("headGroupSpec") or {}] + list(rcs.get("workerGroupSpecs") or ())
        return [g.setdefault("template", {}) for g in groups]
    return []


def containers_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for t in _pod_templates(obj) for c in (t.get("spec") or {}).get("containers") or ()]


def _set_env(container: dict[str, Any], env: Mapping[str, str], drop: Sequence[str] = ()) -> None:
    entries = [e for e in container.get("env") or () if e.get("name") not in env and e.get("name") not in drop]
    entries += [{"name": k, "value": v} for k, v in env.items()]
    container["env"] = entries


def _avoid(pod_spec: dict[str, Any], nodes: Sequence[str]) -> None:
    """Required node anti-affinity: ``kubernetes.io/hostname NotIn nodes`` in every term (terms are ORed)."""
    affinity = pod_spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.setdefault("nodeSelectorTerms", []) or [{}]
    expression = {"key": HOSTNAME_LABEL, "operator": "NotIn", "values": list(nodes)}
    for term in terms:
        term["matchExpressions"] = [e for e in term.get("matchExpressions") or ()
                                    if not (e.get("key") == HOSTNAME_LABEL and e.get("operator") == "NotIn")] + [expression]
    required["nodeSelectorTerms"] = terms


def derive_manifests(manifests: Sequence[Mapping[str, Any]], *, new_name: str, submission_id: str,
                     annotations: Mapping[str, str], env: Mapping[str, str],
                     avoid_nodes: Sequence[str], drop: Sequence[str] = (),
                     drop_env: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Rename a run's objects (Job or RayJob, and the Job's headless Service) to ``new_name`` under a new
    submission id, suspended for Kueue, with ``annotations`` recorded, ``env`` set in every container
    and, when given, a required anti-affinity to ``avoid_nodes``; ``drop`` and ``drop_env`` name
    annotations and variables of the source that must not carry over."""
    out = []
    owner_name = next((str((m.get("metadata") or {}).get("name")) for m in manifests if m.get("kind") in ("Job", "RayJob")), "")
    old_headless, new_headless = f"{owner_name}-headless", f"{new_name}-headless"
    for manifest in manifests:
        obj = copy.deepcopy(dict(manifest))
        obj.pop("status", None)
        meta = obj.setdefault("metadata", {})
        for key in _SERVER_METADATA:
            meta.pop(key, None)
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _JOB_CONTROLLER_LABELS}
        labels[SUBMISSION_ID_LABEL] = submission_id
        meta["labels"] = labels
        if obj.get("kind") == "Service":
            meta["name"] = new_headless if meta.get("name") == old_headless else derived_name(new_name, "svc", "Job")
            obj.setdefault("spec", {})["selector"] = {"job-name": new_name}
            out.append(obj)
            continue
        meta["name"] = new_name
        notes = {k: v for k, v in (meta.get("annotations") or {}).items()
                 if k not in (RETRIED_AS_ANNOTATION, RESUMED_AS_ANNOTATION, *drop)}
        notes.update(annotations)
        if avoid_nodes:
            notes[AVOID_NODES_ANNOTATION] = ",".join(avoid_nodes)
        meta["annotations"] = notes
        spec = obj.setdefault("spec", {})
        spec["suspend"] = True
        if obj.get("kind") == "Job":
            spec.pop("selector", None)
            spec.pop("manualSelector", None)
        for template in _pod_templates(obj):
            tmeta = template.setdefault("metadata", {})
            tlabels = {k: v for k, v in _without_kueue_injected(tmeta.get("labels") or {}).items()
                       if k not in _JOB_CONTROLLER_LABELS}
            if SUBMISSION_ID_LABEL in tlabels:
                tlabels[SUBMISSION_ID_LABEL] = submission_id
            tmeta["labels"] = tlabels
            if "annotations" in tmeta:
                tmeta["annotations"] = _without_kueue_injected(tmeta["annotations"] or {})
            pod_spec = template.setdefault("spec", {})
            if pod_spec.get("subdomain") == old_headless:
                pod_spec["subdomain"] = new_headless
            for container in pod_spec.get("containers") or ():
                _set_env(container, env, drop_env)
            if avoid_nodes:
                _avoid(pod_spec, avoid_nodes)
        out.append(obj)
    return out


