"""The versioned XID catalog: which NVIDIA XID codes mean what, and how bad they are.

The classification is data (``data/xid_catalog.yaml``, package data); this module loads and
checks it."""

from __future__ import annotations

import enum
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tau_tui.core.gpuhealth.verdicts import Action


class XidSeverity(str, enum.Enum):
    UNHEALTHY = "unhealthy"
    DEGRADED = "degraded"
    EVENT = "event"


class XidEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    xid: int = Field(ge=1)
    mnemonic: str
    bucket: str = "UNKNOWN"
    severity: XidSeverity
    action: Action
    recurring_degraded: bool = False


class XidUnknownPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: XidSeverity = XidSeverity.DEGRADED
    action: Action = Action.CONTACT_SUPPORT
    mnemonic: str = "XID not in catalog"


class XidCatalog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    catalog: str = ""
    unknown: XidUnknownPolicy = XidUnknownPolicy()
    recurring_threshold: int = Field(default=3, ge=1)
    recurring_window_s: float = Field(default=3600, gt=0)
    degraded_window_s: float = Field(default=3600, gt=0)
    entries: list[XidEntry]

    def model_post_init(self, __context: Any) -> None:
        seen: set[int] = set()
        for entry in self.entries:
            if entry.xid in seen:
                raise ValueError(f"XID {entry.xid} is listed twice in the catalog")
            seen.add(entry.xid)
        self._by_xid = {entry.xid: entry for entry in self.entries}

    def classify(self, xid: int) -> XidEntry:
        entry = self._by_xid.get(xid)
        if entry is not None:
            return entry
        return XidEntry(
            xid=max(xid, 1),
            mnemonic=self.unknown.mnemonic,
            bucket="UNKNOWN",
            severity=self.unknown.severity,
            action=self.unknown.action,
        )


class CatalogError(ValueError):
    """The XID catalog file is missing or malformed; the message names the file and key."""


def load_xid_catalog(path: str | Path | None = None) -> XidCatalog:
    """Load the versioned XID catalog (the packaged one unless a path is given)."""
    if path is None:
        source = "tau_tui/core/gpuhealth/data/xid_catalog.yaml"
        text = resources.files("tau_tui.core.gpuhealth").joinpath("data/xid_catalog.yaml").read_text("utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise CatalogError(f"{source}: cannot read XID catalog ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{source}: not valid YAML: {exc}") from exc
    try:
        return XidCatalog.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CatalogError(f"{source}: key '{where}': {first['msg']}") from exc
    except ValueError as exc:
        raise CatalogError(f"{source}: {exc}") from exc
