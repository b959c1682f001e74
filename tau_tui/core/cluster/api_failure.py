"""An API call that failed with an HTTP status, and how a mutation reports one: both backends'
primitives raise it, the shared mutations turn it into a MutationResult."""

from __future__ import annotations

from typing import Any

from tau_tui.core.cluster.errors import describe_api_error
from tau_tui.core.cluster.kinds import ResourceType
from tau_tui.core.cluster.mutations import MutationResult


class ApiFailure(Exception):
    """An API call failed with an HTTP status (0 = no response)."""

    def __init__(self, code: int, reason: str = "", message: str = "", body: Any = None):
        super().__init__(message or reason or f"HTTP {code}")
        self.code = code
        self.reason = reason
        self.message = message
        self.body = body if body is not None else {"reason": reason, "message": message, "code": code}


def failure_result(
    exc: ApiFailure, verb: str, rt: ResourceType, name: str, namespace: str | None, dry_run: bool
) -> MutationResult:
    return MutationResult(
        ok=False,
        verb=verb,
        kind=rt.kind,
        name=name,
        namespace=namespace,
        message=describe_api_error(
            exc.code, verb=verb, resource=rt.qualified, namespace=namespace, name=name, body=exc.body, reason=exc.reason
        ),
        dry_run=dry_run,
        code=exc.code,
    )
