"""Test scaffolding: a fake clock, a recording Kubernetes writer, and a simulated node."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tau_agent.agent import Agent
from tau_agent.budget import EventRecord
from tau_agent.call_guard import CallGuard
from tau_agent.collector import Collector
from tau_agent.config import AgentConfig
from tau_agent.kube import NodeActionRequest, OwnNodeState
from tau_agent.nvml_reader import NvmlReader
from tau_agent.xid_watcher import XidWatcher

from .fake_nvml import FakeGpu, FakeNvml

START = 1_800_000_000.0


class FakeClock:
    def __init__(self, start: float = START):
        self.now = start

    def __call__(self) -> float:
        return self.now


@dataclass
class RecordingWriter:
    """Records every write with the simulated time; keeps the latest state like the API would."""

    clock: FakeClock
    own: OwnNodeState = field(default_factory=OwnNodeState)
    writes: list[tuple[str, float, Any]] = field(default_factory=list)
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
    health_status: dict[str, Any] | None = None
    events: dict[str, EventRecord] = field(default_factory=dict)
    fail_next: int = 0

    def read_own_state(self) -> OwnNodeState:
        self.writes.append(("get", self.clock(), None))
        self.own.conditions = list(self.conditions.values())
        self.own.health_status = self.health_status
        return self.own

    def _maybe_fail(self) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("injected API failure")

    def write_conditions(self, conditions: list[dict[str, Any]]) -> None:
        self._maybe_fail()
        self.writes.append(("conditions", self.clock(), conditions))
        for cond in conditions:
            self.conditions[cond["type"]] = cond

    def write_health_object(self, status: dict[str, Any]) -> None:
        self.writes.append(("health", self.clock(), status))
        self.health_status = status

    def write_event(self, event: EventRecord) -> None:
        self._maybe_fail()
        self.writes.append(("event", self.clock(), event))
        self.events[event.name] = event

    def apply_node_actions(self, request: NodeActionRequest, now: float) -> None:
        self.writes.append(("actions", self.clock(), request))

    # -- queries for assertions --

    def times(self, kind: str) -> list[float]:
        return [t for k, t, _ in self.writes if k == kind]

    def event_list(self) -> list[EventRecord]:
        return [payload for k, _, payload in self.writes if k == "event"]

    def event_reasons(self) -> list[str]:
        return [e.reason for e in self.event_list()]

    def condition(self, ctype: str) -> dict[str, Any]:
        return self.conditions[ctype]


def fast_config(**overrides: Any) -> AgentConfig:
    data: dict[str, Any] = {
        "intervals": {"fast_poll_s": 15, "slow_poll_s": 60, "config_poll_s": 600, "call_timeout_s": 0.2},
        "budget": {"startup_delay_max_s": 0},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return AgentConfig.model_validate(data)


class SimNode:
    """One node: fake NVML, the real agent loop, a fake clock and a writer (recording by default;
    the harness tests pass the real KubernetesWriter)."""

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        config: AgentConfig | None = None,
        nvml: FakeNvml | None = None,
        boot_id: str = "boot-1",
        labels: dict[str, str] | None = None,
        writer: RecordingWriter | None = None,
        seed: int = 7,
        clock: FakeClock | None = None,
        node_name: str = "gpu-node-a",
    ):
        self.clock = clock or FakeClock()
        self.nvml = nvml or FakeNvml(gpus or [])
        self.boot_id = boot_id
        self.config = config or fast_config()
        reader = NvmlReader(self.nvml)
        self.guard = CallGuard(self.config.intervals.call_timeout_s)
        self.collector = Collector(reader, self.guard, boot_id=lambda: self.boot_id)
        self.writer = writer or RecordingWriter(self.clock)
        if labels is not None:
            self.writer.own.labels = labels
        self.watcher = XidWatcher(reader, wait_ms=0, clock=self.clock, monotonic=self.clock)
        self.agent = Agent(
            self.config,
            self.collector,
            self.writer,
            node_name=node_name,
            xids=self.watcher,
            clock=self.clock,
            rng=random.Random(seed),
        )
        self.agent.start()

    def step(self, seconds: float = 0.0) -> None:
        """Advance the clock, let the XID thread pass once, run one agent tick."""
        self.clock.now += seconds
        self.watcher.step()
        self.agent.tick(self.clock.now)

    def run_for(self, seconds: float, step: float = 5.0) -> None:
        end = self.clock.now + seconds
        while self.clock.now + step <= end + 1e-9:
            self.step(step)

    @property
    def health(self):
        assert self.agent.health is not None
        return self.agent.health

    def gpu(self, index: int):
        return next(g for g in self.health.gpus if g.index == index)

    def codes(self, index: int) -> list[str]:
        return [r.code for r in self.gpu(index).reasons]
