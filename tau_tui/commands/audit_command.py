"""`audit verify`: check the audit log's hash chain."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .parser import EXIT_FAILED, EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    from ..core.operations.audit import default_audit_path, verify

    path = Path(args.file) if args.file else default_audit_path()
    try:
        result = verify(path)
    except OSError as err:
        print(f"tau-tui: cannot read audit log {path}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    print(result.summary(), file=sys.stdout if result.ok else sys.stderr)
    return EXIT_OK if result.ok else EXIT_FAILED
