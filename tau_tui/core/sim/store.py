"""The simulated API server: objects, resourceVersions, watches, RBAC, dry-run.

Objects are API-shaped dicts.  A stored dict is never changed in place: every
write stores a new dict, so listeners (the backends' caches) can keep the
object they were given without copying."""

from __future__ import annotations

import copy
import random
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceType

Key = tuple[str, str]
TypeKey = tuple[str, str]  # (group, plural)
Listener = Callable[[ResourceType, str, dict[str, Any]], None]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


_Json = TypeVar("_Json")


def jcopy(value: _Json) -> _Json:
    """Deep copy of JSON-shaped data (dicts, lists, scalars); several times
    faster than copy.deepcopy for API objects.  The copy has the type of the original."""
    if isinstance(value, dict):
        return cast(_Json, {k: jcopy(v) for k, v in value.items()})
    if isinstance(value, list):
        return cast(_Json, [jcopy(v) for v in value])
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, Mapping):
        return jcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@dataclass(frozen=True)
class Rule:
    """An allow rule like a PolicyRule; ``namespace=None`` = cluster-wide."""

    verbs: frozenset[str]
    resources: frozenset[str]  # qualified: "workloads.kueue.x-k8s.io", "pods", "pods/log", "*"
    namespace: str | None = None

    def allows(self, verb: str, resource: str, namespace: str | None) -> bool:
        if "*" not in self.verbs and verb not in self.verbs:
            return False
        if "*" not in self.resources and resource not in self.resources:
            return False
        return self.namespace is None or self.namespace == namespace


@dataclass
class Identity:
    name: str
    rules: list[Rule] = field(default_factory=list)


def qualified(rt: ResourceType, sub: str | None = None) -> str:
    base = rt.plural + (f"/{sub}" if sub else "")
    return f"{base}.{rt.group}" if rt.group else base


def _selector_matches(labels: Mapping[str, str], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        term = term.strip()
        if not term:
            continue
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.strip().rstrip("=")) != v.strip().lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    return "" if cur is None else str(cur)


def _fields_match(obj: Mapping[str, Any], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if _field_value(obj, k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if _field_value(obj, k.strip().rstrip("=")) != v.strip():
                return False
    return True


class SimStore:
    def __init__(self, seed: int, now: Callable[[], datetime]):
        self.rng = random.Random(seed)
        self.now = now
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.objects: dict[TypeKey, dict[Key, dict[str, Any]]] = {}
        self.types: dict[TypeKey, ResourceType] = {}
        self.rv = 1000
        self.listeners: list[Listener] = []
        self.identities: dict[str, Identity] = {}
        #: Hooks run on create (after defaulting, before storing): emulate webhooks.
        self.admission_hooks: list[Callable[[ResourceType, dict[str, Any]], None]] = []
        self.delete_hooks: list[Callable[[ResourceType, dict[str, Any]], None]] = []
        #: Schema validation on create and patch (raise ApiFailure 422).
        self.validators: list[Callable[[ResourceType, dict[str, Any]], None]] = []
        self.served: set[TypeKey] | None = None  # None = serve every type
        #: Bearer tokens this API server accepts, and who they authenticate as.
        self.tokens: dict[str, str] = {}

    # -- ids ---------------------------------------------------------------

    def new_uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def rand5(self) -> str:
        return "".join(self.rng.choice(_NAME_ALPHABET) for _ in range(5))

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    # -- raw store (no RBAC; used by controllers and the scenario loader) --

    def bucket(self, rt: ResourceType) -> dict[Key, dict[str, Any]]:
        tk = (rt.group, rt.plural)
        self.types.setdefault(tk, rt)
        return self.objects.setdefault(tk, {})

    @staticmethod
    def key(rt: ResourceType, name: str, namespace: str | None) -> Key:
        return ((namespace or "") if rt.namespaced else "", name)

    def read(self, rt: ResourceType, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.bucket(rt).get(self.key(rt, name, namespace))

    def items(self, rt: ResourceType, namespace: str | None = None) -> list[dict[str, Any]]:
        bucket = self.bucket(rt)
        if namespace is None or not rt.namespaced:
            return list(bucket.values())
        return [o for (ns, _), o in bucket.items() if ns == namespace]

    def put(self, rt: ResourceType, obj: dict[str, Any], *, notify: bool = True) -> dict[str, Any]:
        """Create or replace (controller write).  Sets rv, uid, timestamps."""
        with self.lock:
            return self._put(rt, obj, notify)

    def _put(self, rt: ResourceType, obj: dict[str, Any], notify: bool) -> dict[str, Any]:
        # Own metadata dict: a caller's object may share it with a stored one.
        meta = obj["metadata"] = dict(obj.get("metadata") or {})
        obj.setdefault("apiVersion", rt.api_version)
        obj.setdefault("kind", rt.kind)
        if not rt.namespaced:
            meta.pop("namespace", None)
        key = self.key(rt, meta.get("name", ""), meta.get("namespace"))
        bucket = self.bucket(rt)
        old = bucket.get(key)
        if old is None:
            meta.setdefault("uid", self.new_uid())
            meta.setdefault("creationTimestamp", format_time(self.now()))
            meta.setdefault("generation", 1)
        else:
            old_meta = old.get("metadata") or {}
            meta["uid"] = old_meta.get("uid")
            meta["creationTimestamp"] = old_meta.get("creationTimestamp")
            gen = old_meta.get("generation", 1)
            if obj.get("spec") != old.get("spec"):
                gen += 1
            meta["generation"] = gen
        meta["resourceVersion"] = self._next_rv()
        bucket[key] = obj
        if notify:
            self._notify(rt, "ADDED" if old is None else "MODIFIED", obj)
        return obj

    def update(self, rt: ResourceType, name: str, namespace: str | None, mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        """Copy, mutate, store if anything changed."""
        with self.lock:
            return self._update(rt, name, namespace, mutate)

    def _update(self, rt: ResourceType, name: str, namespace: str | None, mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        old = self.read(rt, name, namespace)
        if old is None:
            return None
        # Copy-on-write: metadata and status deep, spec one level (mutators only
        # set top-level spec keys); pod templates stay shared and unchanged.
        new = dict(old)
        new["metadata"] = jcopy(old.get("metadata") or {})
        if "status" in old:
            new["status"] = jcopy(old["status"])
        if isinstance(old.get("spec"), dict):
            new["spec"] = dict(old["spec"])
        mutate(new)
        if new == old:
            return old
        return self.put(rt, new)

    def remove(self, rt: ResourceType, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        with self.lock:
            return self._remove(rt, name, namespace)

    def _remove(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any] | None:
        old = self.bucket(rt).pop(self.key(rt, name, namespace), None)
        if old is not None:
            for hook in self.delete_hooks:
                hook(rt, old)
            gone = copy.copy(old)
            gone["metadata"] = dict(old.get("metadata") or {}, resourceVersion=self._next_rv())
            self._notify(rt, "DELETED", gone)
        return old

    def _notify(self, rt: ResourceType, event_type: str, obj: dict[str, Any]) -> None:
        with self.lock:
            for listener in list(self.listeners):
                listener(rt, event_type, obj)
            self.changed.notify_all()

    # -- RBAC ---------------------------------------------------------------

    def identity(self, name: str) -> Identity:
        return self.identities.setdefault(name, Identity(name))

    def grant(self, identity: str, verbs: Iterable[str], resources: Iterable[str], namespace: str | None = None) -> None:
        with self.lock:
            self.identity(identity).rules.append(Rule(frozenset(verbs), frozenset(resources), namespace))

    def allowed(self, identity: str | None, verb: str, resource: str, namespace: str | None) -> bool:
        if identity is None:
            return True
        ident = self.identities.get(identity)
        return ident is not None and any(r.allows(verb, resource, namespace) for r in ident.rules)

    def authorize(self, identity: str | None, verb: str, rt: ResourceType, namespace: str | None, sub: str | None = None) -> None:
        resource = qualified(rt, sub)
        if not self.allowed(identity, verb, resource, namespace if rt.namespaced else None):
            where = f' in the namespace "{namespace}"' if namespace and rt.namespaced else " at the cluster scope"
            raise ApiFailure(
                403,
                "Forbidden",
                f'{resource} is forbidden: User "{identity}" cannot {verb} resource "{resource}"{where}',
            )

    def _served(self, rt: ResourceType) -> None:
        if self.served is not None and (rt.group, rt.plural) not in self.served:
            raise ApiFailure(404, "NotFound", f"the server could not find the requested resource ({qualified(rt)})")

    # -- API semantics ------------------------------------------------------

    def api_get(self, identity: str | None, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        with self.lock:
            self._served(rt)
            self.authorize(identity, "get", rt, namespace)
            obj = self.read(rt, name, namespace)
            if obj is None:
                raise ApiFailure(404, "NotFound", f'{qualified(rt)} "{name}" not found', {"reason": "NotFound", "message": f'{qualified(rt)} "{name}" not found', "details": {"name": name}, "code": 404})
            return jcopy(obj)

    def api_list(
        self,
        identity: str | None,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        copy_items: bool = True,
    ) -> list[dict[str, Any]]:
        with self.lock:
            self._served(rt)
            self.authorize(identity, "list", rt, namespace)
            out = [
                o
                for o in self.items(rt, namespace)
                if _selector_matches((o.get("metadata") or {}).get("labels") or {}, label_selector)
                and _fields_match(o, field_selector)
            ]
            return [jcopy(o) for o in out] if copy_items else out

    def api_create(self, identity: str | None, rt: ResourceType, namespace: str | None, body: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        if rt.group in REVIEW_GROUPS:
            return self.review(identity, rt, body)
        with self.lock:
            self._served(rt)
            self.authorize(identity, "create", rt, namespace)
            obj = jcopy(dict(body))
            meta = obj.setdefault("metadata", {})
            meta.pop("resourceVersion", None)
            meta.pop("uid", None)
            if rt.namespaced:
                meta["namespace"] = namespace
                if self.read(_NAMESPACE, namespace or "", None) is None:
                    raise ApiFailure(404, "NotFound", f'namespaces "{namespace}" not found')
            name = meta.get("name")
            if not name and meta.get("generateName"):
                name = meta["name"] = meta["generateName"] + self.rand5()
            causes = []
            if not name:
                causes.append({"field": "metadata.name", "message": "Required value: name or generateName is required"})
            elif not _DNS_SUBDOMAIN.match(name):
                causes.append({"field": "metadata.name", "message": f"Invalid value: {name!r}: must be a lowercase RFC 1123 subdomain"})
            for hook in self.admission_hooks:
                try:
                    hook(rt, obj)
                except ApiFailure as exc:
                    raise exc
            for validate in self.validators:
                validate(rt, obj)
            if causes:
                raise ApiFailure(422, "Invalid", f'{rt.kind} "{name}" is invalid',
                                 {"reason": "Invalid", "message": f'{rt.kind} "{name}" is invalid', "code": 422,
                                  "details": {"name": name, "kind": rt.kind, "causes": causes}})
            if self.read(rt, name, namespace) is not None:
                raise ApiFailure(409, "AlreadyExists", f'{qualified(rt)} "{name}" already exists',
                                 {"reason": "AlreadyExists", "message": f'{qualified(rt)} "{name}" already exists', "code": 409})
            if dry_run:
                meta.setdefault("uid", "00000000-0000-0000-0000-000000000000")
                meta.setdefault("creationTimestamp", format_time(self.now()))
                return obj
            stored = self.put(rt, obj)
            return jcopy(stored)

    def api_delete(self, identity: str | None, rt: ResourceType, name: str, namespace: str | None, dry_run: bool) -> None:
        with self.lock:
            self._served(rt)
            self.authorize(identity, "delete", rt, namespace)
            if self.read(rt, name, namespace) is None:
                raise ApiFailure(404, "NotFound", f'{qualified(rt)} "{name}" not found',
                                 {"reason": "NotFound", "message": f'{qualified(rt)} "{name}" not found', "details": {"name": name}, "code": 404})
            if not dry_run:
                self.remove(rt, name, namespace)

    def api_patch(self, identity: str | None, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        with self.lock:
            self._served(rt)
            self.authorize(identity, "patch", rt, namespace)
            old = self.read(rt, name, namespace)
            if old is None:
                raise ApiFailure(404, "NotFound", f'{qualified(rt)} "{name}" not found',
                                 {"reason": "NotFound", "message": f'{qualified(rt)} "{name}" not found', "details": {"name": name}, "code": 404})
            new: dict[str, Any] = merge_patch(jcopy(old), patch)
            for validate in self.validators:
                validate(rt, new)
            if dry_run:
                return new
            if new == old:
                return jcopy(old)
            return jcopy(self.put(rt, new))

    def api_evict(self, identity: str | None, pod_rt: ResourceType, name: str, namespace: str, dry_run: bool) -> None:
        with self.lock:
            self.authorize(identity, "create", pod_rt, namespace, sub="eviction")
            if self.read(pod_rt, name, namespace) is None:
                raise ApiFailure(404, "NotFound", f'pods "{name}" not found')
            if not dry_run:
                self.remove(pod_rt, name, namespace)


    # -- access and identity reviews (answered, never stored) ---------------

    def review(self, identity: str | None, rt: ResourceType, body: Mapping[str, Any]) -> dict[str, Any]:
        """SelfSubjectReview, SelfSubjectAccessReview, SelfSubjectRulesReview and
        SubjectAccessReview, answered from the RBAC allow rules."""
        spec = dict(body.get("spec") or {})
        out = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {}, "spec": spec}
        with self.lock:
            if rt.plural == "selfsubjectreviews":
                out["status"] = {"userInfo": {"username": identity or ADMIN_NAME}}
            elif rt.plural in ("selfsubjectaccessreviews", "subjectaccessreviews"):
                groups: list[str] = []
                if rt.plural == "subjectaccessreviews":
                    self.authorize(identity, "create", rt, None)
                    who = spec.get("user")
                    # As RBAC does: a grant to any of the subject's groups (granted here by group name) applies.
                    groups = [g for g in spec.get("groups") or () if isinstance(g, str) and g]
                else:
                    who = identity
                attrs = spec.get("resourceAttributes") or {}
                resource = attrs.get("resource", "") + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
                if attrs.get("group"):
                    resource = f"{resource}.{attrs['group']}"
                allowed = who is not None and any(self.allowed(subject, attrs.get("verb", ""), resource, attrs.get("namespace") or None)
                                                  for subject in (who, *groups) if subject)
                out["status"] = {"allowed": allowed}
            elif rt.plural == "selfsubjectrulesreviews":
                namespace = spec.get("namespace")
                rules = [] if identity is None else [r for r in self.identity(identity).rules
                                                     if r.namespace is None or r.namespace == namespace]
                if identity is None:
                    rules = [Rule(frozenset({"*"}), frozenset({"*"}))]
                out["status"] = {"resourceRules": [_policy_rule(r) for r in rules], "incomplete": False}
            else:
                raise ApiFailure(404, "NotFound", f"the server could not find the requested resource ({qualified(rt)})")
        return out

    def authenticate(self, token: str) -> str:
        """The identity a bearer token stands for (401 when the token is unknown or revoked)."""
        with self.lock:
            who = self.tokens.get(token)
        if who is None:
            raise ApiFailure(401, "Unauthorized", "Unauthorized")
        return who


def _policy_rule(rule: Rule) -> dict[str, Any]:
    """A Rule as the API's ResourceRule: apiGroups, resources, verbs."""
    groups, resources = set(), set()
    for qualified_name in rule.resources:
        if qualified_name == "*":
            groups.add("*")
            resources.add("*")
            continue
        base, _, group = qualified_name.partition(".")
        resources.add(base)
        groups.add(group)
    return {"verbs": sorted(rule.verbs), "apiGroups": sorted(groups), "resources": sorted(resources)}


REVIEW_GROUPS = frozenset({"authorization.k8s.io", "authentication.k8s.io"})
#: Who a backend without an identity (cluster admin) is, as SelfSubjectReview reports it.
ADMIN_NAME = "kubernetes-admin"
_NAMESPACE = ResourceType("", "v1", "namespaces", "Namespace", False)
