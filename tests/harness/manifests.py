"""Create the objects of a YAML manifest file through the Kubernetes dynamic client."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ConflictError


def create_from_file(api_client: k8s.ApiClient, path: Path | str, *, exist_ok: bool = True) -> list[dict]:
    """Create every document of `path` in order; an object that already exists is kept when `exist_ok`."""
    dyn = DynamicClient(api_client)
    created = []
    for doc in yaml.safe_load_all(Path(path).read_text()):
        if not doc:
            continue
        resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        namespace = doc["metadata"].get("namespace")
        try:
            obj = resource.create(body=doc, namespace=namespace) if resource.namespaced else resource.create(body=doc)
        except ConflictError:
            if not exist_ok:
                raise
            continue
        created.append(obj.to_dict())
    return created
