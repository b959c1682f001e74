"""The simulated world's knobs, apart from the world so its controllers can read them without
importing the module that builds them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SimSettings:
    visibility_api: bool = True
    default_duration_seconds: float = 900.0
    log_interval_seconds: float = 2.0
    worker_lost_timeout_seconds: float = 900.0
    heartbeat_seconds: float = 240.0
    events: bool = True
    context: str = "sim"
    #: What ``GET /version`` reports (the MultiKueue dependency matrix compares minors): the
    #: default cell's, so ``--demo`` with its Kueue CRDs is a tested cell (core/cluster/tested_cells.py).
    kubernetes_version: str = "v1.35.4"
