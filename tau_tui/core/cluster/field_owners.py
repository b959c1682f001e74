"""Which field managers own an annotation, read from ``metadata.managedFields``.

The cache drops managedFields (large, and nothing on screen shows them) except for one fact the
drain budget needs: who wrote the cordon-timestamp annotation. The budget trusts that timestamp
only when the node agent wrote it (the admission policy lets the agent set it only in the
request that cordons), so a Node carrying it keeps a reduced managedFields: one entry per owner
of that key, holding just that key."""

from __future__ import annotations

from typing import Any

from tau_gpuhealth.names import ANNOTATION_CORDON_TIMESTAMP

#: Annotations whose owners survive the cache's strip of managedFields.
OWNED_ANNOTATIONS_KEPT = (ANNOTATION_CORDON_TIMESTAMP,)


def annotation_owners(managed_fields: Any, annotation: str) -> list[str]:
    """Managers whose field set holds ``metadata.annotations[annotation]`` (empty when unknown)."""
    owners: list[str] = []
    for entry in managed_fields if isinstance(managed_fields, list) else ():
        if not isinstance(entry, dict):
            continue
        fields = entry.get("fieldsV1")
        metadata = fields.get("f:metadata") if isinstance(fields, dict) else None
        annotations = metadata.get("f:annotations") if isinstance(metadata, dict) else None
        if isinstance(annotations, dict) and f"f:{annotation}" in annotations:
            owners.append(str(entry.get("manager") or ""))
    return owners


def reduced_managed_fields(managed_fields: Any, annotations: Any) -> list[dict[str, Any]]:
    """managedFields cut down to the owners of the kept annotations the object carries."""
    if not isinstance(annotations, dict):
        return []
    kept: list[dict[str, Any]] = []
    for annotation in OWNED_ANNOTATIONS_KEPT:
        if annotation not in annotations:
            continue
        kept += [
            {"manager": manager, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{annotation}": {}}}}}
            for manager in annotation_owners(managed_fields, annotation)
        ]
    return kept
