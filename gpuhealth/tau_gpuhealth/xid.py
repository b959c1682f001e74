"""The versioned XID catalog: which NVIDIA XID codes mean what, and how bad they are.

The classification is data (``data/xid_catalog.yaml``, package data); this module loads and
checks it."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tau_gpuhealth.datafile import load_data_file
from tau_gpuhealth.verdicts import Action


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
    return load_data_file(path, "data/xid_catalog.yaml", XidCatalog, CatalogError, "XID catalog")
