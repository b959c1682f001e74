"""The cells of the version matrix that ran and passed (``docs/compatibility.md``), and whether the
Kubernetes and Kueue releases a server runs are one of them.

A cell is a Kubernetes minor and a Kueue release minor.  Kueue's release comes from the
``app.kubernetes.io/version`` label of its Workload CRD (its Helm chart and the harness set it),
else from the shape of its API: which versions are served and stored (``../shared/reference/kueue.md``
A1.0).  The `deprecated` mark on v1beta1 tells nothing: v0.16.0 and v0.15's later patches carry it
too (read from the CRDs at each tag).  The shape tells a release only within a range ("v0.16 or
newer"); such a release is judged outside the table only when no tested cell could match it."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

#: (Kubernetes minor, Kueue release minor) of each cell that passed: the table's "passed" rows.
TESTED_CELLS: tuple[tuple[str, str], ...] = (("1.35", "v0.17"), ("1.34", "v0.17"), ("1.35", "v0.16"), ("1.34", "v0.15"), ("1.36", "v0.19"), ("1.33", "v0.17"))
COMPATIBILITY_DOC = "docs/compatibility.md"
KUEUE_OLD_API = "v1beta1"
KUEUE_NEW_API = "v1beta2"

Minor = tuple[int, int]
_MINOR = re.compile(r"v?(\d+)\.(\d+)")


def release_minor(version: str | None) -> Minor | None:
    """``v1.35.4+k3s1`` → (1, 35), ``v0.17.0`` → (0, 17); None for what is not a version."""
    found = _MINOR.match(version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def _kueue_minor_text(minor: Minor) -> str:
    return f"v{minor[0]}.{minor[1]}"


@dataclass(frozen=True, slots=True)
class KueueRelease:
    """A Kueue release as far as it can be told: a minor from ``oldest`` to ``newest`` (None: unbounded)."""

    text: str
    how: str
    oldest: Minor | None
    newest: Minor | None

    def could_be(self, minor: Minor) -> bool:
        return (self.oldest is None or minor >= self.oldest) and (self.newest is None or minor <= self.newest)

    def __str__(self) -> str:
        return f"{self.text} ({self.how})"


BY_LABEL = "CRD label"
BY_API = "by its API"


@dataclass(frozen=True, slots=True)
class KueueApiShape:
    """The versions Kueue's Workload API serves; ``storage`` and ``deprecated`` None when unknown
    (API discovery tells neither; the CRD tells both)."""

    served: frozenset[str]
    storage: frozenset[str] | None = None
    deprecated: frozenset[str] | None = None


def kueue_release_from_label(label: str | None) -> KueueRelease | None:
    """The release the CRD's version label names; None without one, or when it is no version."""
    minor = release_minor(label)
    if label is None or minor is None:
        return None
    return KueueRelease(label, BY_LABEL, minor, minor)


def _range(oldest: Minor | None, newest: Minor | None) -> KueueRelease:
    if oldest == newest and oldest is not None:
        return KueueRelease(_kueue_minor_text(oldest), BY_API, oldest, newest)
    if oldest is None and newest is not None:
        return KueueRelease(f"{_kueue_minor_text(newest)} or older", BY_API, None, newest)
    assert oldest is not None
    return KueueRelease(f"{_kueue_minor_text(oldest)} or newer", BY_API, oldest, None)


def kueue_release_from_shape(shape: KueueApiShape | None) -> KueueRelease | None:
    """The releases whose Workload API has this shape (kueue.md A1.0); None when nothing is served."""
    if shape is None or not shape.served:
        return None
    if KUEUE_NEW_API not in shape.served:
        return _range(None, (0, 14))  # v1beta1 only
    if KUEUE_OLD_API not in shape.served:
        return _range((0, 20), None)  # v0.19 still serves v1beta1
    if shape.storage is None:
        return _range((0, 15), None)  # both served: v0.15 and every release since
    if KUEUE_OLD_API in shape.storage:
        return _range((0, 15), (0, 15))
    return _range((0, 16), None)  # v0.16 moved storage to v1beta2; v0.16 to v0.19 look alike


def kueue_release(label: str | None, shape: KueueApiShape | None) -> KueueRelease | None:
    """The release from the CRD's version label when it names one, else from the API's shape."""
    return kueue_release_from_label(label) or kueue_release_from_shape(shape)


class Verdict(enum.Enum):
    TESTED = "tested"
    OUTSIDE = "outside the table"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class CellJudgement:
    verdict: Verdict
    reason: str


def judge_cell(kubernetes: str | None, kueue: KueueRelease | None,
               cells: Iterable[tuple[str, str]] = TESTED_CELLS) -> CellJudgement:
    """Whether a server's Kubernetes ``gitVersion`` and Kueue release are a tested cell."""
    kube_minor = release_minor(kubernetes)
    if kubernetes is None or kube_minor is None or kube_minor[0] < 1:  # v0.0.0-master: a build from source
        return CellJudgement(Verdict.UNKNOWN, "the Kubernetes version is unknown")
    if kueue is None:
        return CellJudgement(Verdict.UNKNOWN, "the Kueue release is unknown")
    found = f"Kubernetes {kubernetes} with Kueue {kueue}"
    matches = [(k, q) for k, q in cells
               if release_minor(k) == kube_minor and (minor := release_minor(q)) is not None and kueue.could_be(minor)]
    if not matches:
        return CellJudgement(Verdict.OUTSIDE, f"{found} is outside the tested version matrix: see {COMPATIBILITY_DOC}")
    if kueue.oldest is not None and kueue.oldest == kueue.newest:
        return CellJudgement(Verdict.TESTED, f"{found} is a tested cell ({COMPATIBILITY_DOC})")
    could = ", ".join(f"Kubernetes {k} with Kueue {q}" for k, q in matches)
    return CellJudgement(Verdict.UNKNOWN, f"{found} could be a tested cell ({could})")


__all__ = [
    "COMPATIBILITY_DOC",
    "TESTED_CELLS",
    "CellJudgement",
    "KueueApiShape",
    "KueueRelease",
    "Verdict",
    "judge_cell",
    "kueue_release",
    "kueue_release_from_label",
    "kueue_release_from_shape",
    "release_minor",
]
