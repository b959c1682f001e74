"""Server-side printing for benchmarks/watch_source.py: the ``meta.k8s.io/v1`` Table a real API
server answers when a client asks ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` (k9s
lists every custom resource so, kubectl get too).

Workloads get the columns of Kueue v1beta2's Workload CRD (its additionalPrinterColumns: Queue is
``spec.queueName``, which the staleness runs change), after Name, as the apiextensions server
prints a custom resource; every other kind gets Name and Age.  A row carries the object as
``includeObject`` asks: ``Metadata`` (the default; a PartialObjectMetadata), ``Object`` (the whole
object) or ``None``.  A date column shows the age, as the server's ``HumanDuration``."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from functools import lru_cache
from typing import Any

TABLE_MEDIA = "as=Table"
INCLUDE_OBJECT = ("None", "Metadata", "Object")
NAME_DESCRIPTION = ("Name must be unique within a namespace. Is required when creating resources, although some "
                    "resources may allow a client to request the generation of an appropriate name automatically. "
                    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
                    "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")

#: Kueue v0.17 config/components/crd/bases/kueue.x-k8s.io_workloads.yaml, v1beta2 additionalPrinterColumns.
WORKLOAD_PRINTER_COLUMNS: tuple[dict[str, str], ...] = (
    {"name": "Queue", "type": "string", "jsonPath": ".spec.queueName",
     "description": "Name of the queue this workload was submitted to"},
    {"name": "Reserved in", "type": "string", "jsonPath": ".status.admission.clusterQueue",
     "description": "Name of the ClusterQueue where the workload is reserving quota"},
    {"name": "Admitted", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Admitted')].status",
     "description": "Admission status"},
    {"name": "Finished", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Finished')].status",
     "description": "Workload finished"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
     "description": "Time this workload was created"},
)
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
              "description": "CreationTimestamp is a timestamp representing the server time when this object was created."}
PRINTER_COLUMNS = {"workloads": WORKLOAD_PRINTER_COLUMNS}
STEP = re.compile(r"\.([^.\[]+)(?:\[\?\(@\.([^=]+)==['\"]([^'\"]*)['\"]\)\])?")


def wants_table(accept: str | None) -> bool:
    """Whether an Accept header asks for a Table (any of the versions k9s and kubectl name)."""
    return accept is not None and TABLE_MEDIA in accept.replace(" ", "")


def printer_columns(plural: str) -> tuple[dict[str, str], ...]:
    return PRINTER_COLUMNS.get(plural, (AGE_COLUMN,))


def column_definitions(plural: str) -> list[dict]:
    """Name first, then the kind's printer columns, as the server defines them."""
    return ([{"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0}]
            + [{"name": c["name"], "type": c["type"], "format": "", "description": c["description"], "priority": 0}
               for c in printer_columns(plural)])


@lru_cache(maxsize=64)
def _steps(path: str) -> list[tuple[str, str, str]]:
    return STEP.findall(path)


def json_path(obj: Any, path: str) -> Any:
    """The value at a printer column's JSONPath: dotted fields, each optionally filtered by
    ``[?(@.field=='value')]`` (the first item that matches); None where a step finds nothing."""
    for field, key, wanted in _steps(path):
        obj = obj.get(field) if isinstance(obj, dict) else None
        if key:
            obj = next((item for item in obj or () if isinstance(item, dict) and str(item.get(key)) == wanted), None)
        if obj is None:
            return None
    return obj


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``."""
    seconds = int(seconds)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return f"{hours // 24 // 365}y{hours // 24 % 365}d" if hours // 24 % 365 else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def cells(plural: str, obj: dict, now: float | None = None) -> list[Any]:
    out: list[Any] = [obj["metadata"]["name"]]
    for column in printer_columns(plural):
        value = json_path(obj, column["jsonPath"])
        if column["type"] == "date" and isinstance(value, str):
            try:
                value = human_duration((time.time() if now is None else now) - datetime.fromisoformat(value).timestamp())
            except ValueError:
                pass
        out.append(value)
    return out


def row(plural: str, obj: dict, include: str = "Metadata") -> dict:
    """One Table row: the cells, and the object as ``include`` asks."""
    out: dict[str, Any] = {"cells": cells(plural, obj)}
    if include == "Object":
        out["object"] = obj
    elif include != "None":
        out["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
    return out


def encoded_row(plural: str, obj: dict, include: str = "Metadata") -> bytes:
    return json.dumps(row(plural, obj, include), separators=(",", ":")).encode()


def table(plural: str, rows: list[bytes], metadata: dict, headers: bool = True) -> bytes:
    """A Table of encoded rows; ``headers`` False leaves the column definitions out (a watch's
    events after its first, as the server does)."""
    head = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}
    if headers:
        head["columnDefinitions"] = column_definitions(plural)
    return json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"rows":[' + b",".join(rows) + b"]}"


def watch_event_as_table(plural: str, line: bytes, include: str, headers: bool) -> bytes:
    """A watch event line whose object is a Table of that one object (a BOOKMARK or ERROR as it is)."""
    event = json.loads(line)
    obj = event.get("object") or {}
    if event.get("type") not in ("ADDED", "MODIFIED", "DELETED") or "metadata" not in obj:
        return line
    body = table(plural, [encoded_row(plural, obj, include)],
                 {"resourceVersion": obj["metadata"].get("resourceVersion", "")}, headers)
    return b'{"type":"' + event["type"].encode() + b'","object":' + body + b"}\n"
