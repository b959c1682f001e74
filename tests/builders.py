"""Kubernetes objects for tests, as plain dicts the way the API server serves them: one factory a kind.

Each factory writes only the fields it is given (a test's object holds what the code under test
reads, nothing more); ``api=True`` adds apiVersion and kind for objects a store or server keeps.
Files that build many objects of one shape wrap these with their own names and defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]


def _time(value: datetime | str) -> str:
    return value.isoformat() if isinstance(value, datetime) else value


def _given(**fields: Any) -> Obj:
    """The fields that have a value (None: not given)."""
    return {key: value for key, value in fields.items() if value is not None}


def _metadata(name: str, namespace: str | None, *, uid: str | None = None, labels: Mapping[str, str] | None = None,
              annotations: Mapping[str, str] | None = None, owner: tuple[str, str] | None = None,
              extra: Mapping[str, Any] | None = None) -> Obj:
    owners = None if owner is None else [{"kind": owner[0], "name": owner[1], "controller": True}]
    return _given(name=name, namespace=namespace, uid=uid, labels=None if labels is None else dict(labels),
                  annotations=None if annotations is None else dict(annotations), ownerReferences=owners) | dict(extra or {})


def condition(type_: str, status: str = "True", reason: str | None = None, message: str | None = None, *,
              heartbeat: datetime | str | None = None, transition: datetime | str | None = None) -> Obj:
    """A status condition of any kind (Job, Workload, Node, Pod)."""
    return _given(type=type_, status=status, reason=reason, message=message,
                  lastHeartbeatTime=None if heartbeat is None else _time(heartbeat),
                  lastTransitionTime=None if transition is None else _time(transition))


def node_condition(type_: str, status: str = "True", heartbeat: datetime | str = "", reason: str = "",
                   message: str = "") -> Obj:
    """A node condition as NPD, the collector and tau-agent write it: beat and transition at one moment."""
    return condition(type_, status, reason or f"{type_}Reason", message, heartbeat=heartbeat, transition=heartbeat)


def node(name: str = "gpu-1", *conditions: Obj, ready: bool | None = True, gpus: int | None = None,
         capacity: Mapping[str, str] | None = None, allocatable: bool = True, cordoned: bool | None = None,
         uid: str | None = None, resource_version: str | None = None, labels: Mapping[str, str] | None = None,
         annotations: Mapping[str, str] | None = None, api: bool = False) -> Obj:
    """A node; ``ready`` puts a Ready condition before ``conditions`` (None: no Ready condition), ``gpus``
    its nvidia.com/gpu capacity (with ``capacity``'s other resources), also allocatable unless told not."""
    extra: Obj = {}
    if resource_version is not None:
        extra["resourceVersion"] = resource_version
    obj: Obj = {"metadata": _metadata(name, None, uid=uid, labels=labels, annotations=annotations, extra=extra)}
    if api:
        obj = {"apiVersion": "v1", "kind": "Node", **obj, "spec": {}}
    if cordoned is not None:
        obj["spec"] = {"unschedulable": cordoned}
    status: Obj = {}
    if gpus is not None:
        status["capacity"] = {**(capacity or {}), "nvidia.com/gpu": str(gpus)}
        if allocatable:
            status["allocatable"] = dict(status["capacity"])
    if ready is not None or conditions:
        ready_condition = [] if ready is None else [condition("Ready", "True" if ready else "False")]
        status["conditions"] = [*ready_condition, *conditions]
    obj["status"] = status
    return obj


def container_status(name: str = "main", state: str = "running", *, ready: bool = False, restarts: int = 0,
                     last: str | None = None, **detail: Any) -> Obj:
    """A container's status in ``state`` (running, waiting, terminated) with ``detail`` (reason, exitCode…)
    under it; ``last``: the reason its previous run was terminated with (exit code 137)."""
    out: Obj = {"name": name, "ready": ready, "restartCount": restarts, "state": {state: detail}}
    if last:
        out["lastState"] = {"terminated": {"reason": last, "exitCode": 137}}
    return out


def pod(name: str, namespace: str | None = "team-nlp", *, node: str | None = None, containers: Iterable[str] = ("main",),
        image: str | None = None, phase: str | None = "Running", labels: Mapping[str, str] | None = None,
        uid: str | None = None, owner: tuple[str, str] | None = None, metadata: Mapping[str, Any] | None = None,
        spec: Mapping[str, Any] | None = None, status: Mapping[str, Any] | None = None, api: bool = False) -> Obj:
    """A pod of ``containers`` (names, each with ``image`` where given) on ``node``; ``metadata``, ``spec``
    and ``status`` add fields; ``phase`` None and no ``status``: a pod with no status (a manifest)."""
    pod_spec: Obj = {"containers": [{"name": c} if image is None else {"name": c, "image": image} for c in containers]}
    if node is not None:
        pod_spec = {"nodeName": node, **pod_spec}
    pod_spec.update(spec or {})
    obj: Obj = {"metadata": _metadata(name, namespace, uid=uid, labels=labels, owner=owner, extra=metadata),
                "spec": pod_spec}
    if phase is not None or status:
        obj["status"] = {**({} if phase is None else {"phase": phase}), **(status or {})}
    return {"apiVersion": "v1", "kind": "Pod", **obj} if api else obj


def job(name: str, namespace: str | None = None, *, labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None, uid: str | None = None, created: str | None = None,
        suspend: bool | None = None, spec: Mapping[str, Any] | None = None, pod_spec: Mapping[str, Any] | None = None,
        pod_metadata: Mapping[str, Any] | None = None, conditions: Iterable[Obj] | None = None,
        metadata: Mapping[str, Any] | None = None, api: bool = False) -> Obj:
    """A batch/v1 Job; ``pod_spec`` (and ``pod_metadata``) its template, ``conditions`` its status."""
    extra: Obj = dict(metadata or {})
    if created is not None:
        extra["creationTimestamp"] = created
    job_spec: Obj = {} if suspend is None else {"suspend": suspend}
    job_spec.update(spec or {})
    if pod_spec is not None:
        template: Obj = {"spec": dict(pod_spec)}
        if pod_metadata is not None:
            template = {"metadata": dict(pod_metadata), **template}
        job_spec["template"] = template
    obj: Obj = {"metadata": _metadata(name, namespace, uid=uid, labels=labels, annotations=annotations, extra=extra),
                "spec": job_spec}
    if conditions is not None:
        obj["status"] = {"conditions": list(conditions)}
    return {"apiVersion": "batch/v1", "kind": "Job", **obj} if api else obj


def workload(name: str, namespace: str | None = None, *, conditions: Iterable[Obj] = (),
             checks: Iterable[Obj] | None = None, cluster: str | None = None, nominated: Iterable[str] = (),
             queue: str | None = None, active: bool | None = None, uid: str | None = None,
             labels: Mapping[str, str] | None = None) -> Obj:
    """A Kueue Workload with its status: ``conditions``, admission ``checks``, the MultiKueue ``cluster``
    it was dispatched to and the ``nominated`` ones."""
    status: Obj = {"conditions": list(conditions)}
    if checks is not None:
        status["admissionChecks"] = list(checks)
    if cluster:
        status["clusterName"] = cluster
    nominated = list(nominated)
    if nominated:
        status["nominatedClusterNames"] = nominated
    spec: Obj = {}
    if queue is not None:
        spec["queueName"] = queue
    if active is not None:
        spec["active"] = active
    return {"metadata": _metadata(name, namespace, uid=uid, labels=labels), "spec": spec, "status": status}


def self_signed_key_and_cert(common_name: str) -> tuple[bytes, bytes]:
    """A private key and its self-signed certificate (PEM), standing in for a CA and a client alike."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=1)).sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)
