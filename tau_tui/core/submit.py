"""Create rendered objects on the API server, or server-dry-run them, idempotently.

A re-submit of the same file carries the same `tau.azure.com/submission-id` label, so an
existing object with that label is reported as already submitted instead of duplicated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import urllib3

from .cluster.errors import describe_api_error
from .kubehttp import request_json

SUBMISSION_LABEL = "tau.azure.com/submission-id"
FIELD_MANAGER = "tau-tui"

# apiVersion/kind -> (URL prefix, plural, kubectl resource name)
KNOWN_KINDS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("batch/v1", "Job"): ("/apis/batch/v1", "jobs", "jobs.batch"),
    ("v1", "Service"): ("/api/v1", "services", "services"),
    ("ray.io/v1", "RayJob"): ("/apis/ray.io/v1", "rayjobs", "rayjobs.ray.io"),
}


@dataclass(frozen=True)
class SubmitOutcome:
    kind: str
    name: str
    namespace: str
    status: str  # created | dry-run-ok | already-submitted | failed
    message: str

    @property
    def ok(self) -> bool:
        return self.status != "failed"


class SubmitError(Exception):
    pass


def submit_manifests(api_client: Any, manifests: Sequence[Mapping[str, Any]], dry_run: bool = False) -> list[SubmitOutcome]:
    """Create each object in order; stop at the first failure so nothing half-submits silently."""
    from kubernetes.client.exceptions import ApiException

    outcomes: list[SubmitOutcome] = []
    # The headless Service first: a Job whose Service failed would start pods that cannot rendezvous.
    ordered = sorted(manifests, key=lambda m: 0 if m.get("kind") == "Service" else 1)
    for manifest in ordered:
        api_version, kind = str(manifest.get("apiVersion")), str(manifest.get("kind"))
        meta = manifest.get("metadata") or {}
        name, namespace = str(meta.get("name")), str(meta.get("namespace"))
        if (api_version, kind) not in KNOWN_KINDS:
            raise SubmitError(f"tau-tui does not submit {api_version} {kind}")
        prefix, plural, resource = KNOWN_KINDS[(api_version, kind)]
        collection = f"{prefix}/namespaces/{namespace}/{plural}"
        wanted_id = (meta.get("labels") or {}).get(SUBMISSION_LABEL)
        query = [("fieldManager", FIELD_MANAGER), ("fieldValidation", "Strict")]
        if dry_run:
            query.append(("dryRun", "All"))
        verb = "get"  # the existence check comes first; its refusal needs a different grant
        try:
            existing = _get_or_none(api_client, f"{collection}/{name}")
            verb = "create"
            if existing is not None:
                outcomes.append(_existing_outcome(existing, kind, name, namespace, wanted_id, resource))
                if not outcomes[-1].ok:
                    return outcomes
                continue
            request_json(api_client, "POST", collection, body=dict(manifest), query=query)
        except ApiException as err:
            if err.status == 409:
                existing = _get_or_none(api_client, f"{collection}/{name}")
                if existing is not None:
                    outcomes.append(_existing_outcome(existing, kind, name, namespace, wanted_id, resource))
                    if outcomes[-1].ok:
                        continue
                    return outcomes
            message = describe_api_error(err.status, verb=verb, resource=resource, namespace=namespace, name=name, body=err.body, reason=err.reason)
            outcomes.append(SubmitOutcome(kind, name, namespace, "failed", message))
            return outcomes
        except (OSError, urllib3.exceptions.HTTPError) as err:  # connection refused, TLS, timeouts
            message = describe_api_error(None, verb=verb, resource=resource, namespace=namespace, name=name, reason=str(err))
            outcomes.append(SubmitOutcome(kind, name, namespace, "failed", message))
            return outcomes
        status = "dry-run-ok" if dry_run else "created"
        text = "server dry-run accepted" if dry_run else "created"
        outcomes.append(SubmitOutcome(kind, name, namespace, status, f"{kind} {namespace}/{name} {text}"))
    return outcomes


def _get_or_none(api_client: Any, path: str) -> dict[str, Any] | None:
    from kubernetes.client.exceptions import ApiException

    try:
        return request_json(api_client, "GET", path)
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def _existing_outcome(existing: Mapping[str, Any], kind: str, name: str, namespace: str, wanted_id: str | None, resource: str) -> SubmitOutcome:
    found_id = ((existing.get("metadata") or {}).get("labels") or {}).get(SUBMISSION_LABEL)
    if wanted_id and found_id == wanted_id:
        return SubmitOutcome(kind, name, namespace, "already-submitted", f"{kind} {namespace}/{name} was already submitted with submission id {wanted_id}; nothing created")
    return SubmitOutcome(
        kind, name, namespace, "failed",
        f"{resource}/{name} already exists in ns {namespace} from a different submission "
        f"(submission id {found_id or 'none'}, this one {wanted_id}). Rename the run (name:) or delete the old one first.",
    )
