"""Prometheus metrics served on /metrics (own registry, so tests can build many agents)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from tau_gpuhealth.report import NodeHealth
from tau_gpuhealth.verdicts import Verdict


class AgentMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.node_verdict = Gauge("tau_agent_node_health", "1 for the node's current GPU verdict", ["verdict"], registry=r)
        self.gpu_verdict = Gauge(
            "tau_agent_gpu_health", "1 for each GPU's current verdict", ["gpu", "uuid", "verdict"], registry=r
        )
        self.gpu_temperature = Gauge("tau_agent_gpu_temperature_celsius", "GPU temperature", ["gpu", "uuid"], registry=r)
        self.gpu_power = Gauge("tau_agent_gpu_power_watts", "GPU power draw", ["gpu", "uuid"], registry=r)
        self.gpu_utilization = Gauge("tau_agent_gpu_utilization_ratio", "GPU utilisation 0-1", ["gpu", "uuid"], registry=r)
        self.gpu_memory_used = Gauge("tau_agent_gpu_memory_used_bytes", "GPU memory used", ["gpu", "uuid"], registry=r)
        self.gpu_dbe = Gauge("tau_agent_gpu_ecc_volatile_dbe", "volatile double-bit ECC errors", ["gpu", "uuid"], registry=r)
        self.xids = Counter("tau_agent_xid", "XID events seen", ["gpu", "xid", "severity"], registry=r)
        self.writes = Counter("tau_agent_kube_writes", "Kubernetes writes", ["kind", "result"], registry=r)
        self.deferred = Gauge("tau_agent_report_deferred", "changes waiting for the write budget", registry=r)
        self.events_pending = Gauge("tau_agent_events_pending", "Event occurrences waiting for budget", registry=r)
        self.polls = Counter("tau_agent_polls", "NVML poll cycles", registry=r)
        self.poll_seconds = Gauge("tau_agent_poll_duration_seconds", "duration of the last poll", registry=r)
        self.hung_calls = Gauge("tau_agent_nvml_hung_calls", "NVML calls past their deadline", registry=r)
        self.http_connections = Counter(
            "tau_agent_http_connections",
            "HTTP connections by listener and result (status code, refused when the pool is full, timed_out)",
            ["listener", "result"],
            registry=r,
        )

    def observe(self, health: NodeHealth) -> None:
        for verdict in Verdict:
            self.node_verdict.labels(verdict.value).set(1 if health.verdict is verdict else 0)
        self.gpu_verdict.clear()
        for gpu in health.gpus:
            labels = (str(gpu.index), gpu.uuid or "")
            for verdict in Verdict:
                self.gpu_verdict.labels(*labels, verdict.value).set(1 if gpu.verdict is verdict else 0)
            t = gpu.telemetry
            if t is None:
                continue
            for gauge, value in (
                (self.gpu_temperature, t.temperature_c),
                (self.gpu_power, t.power_w),
                (self.gpu_utilization, None if t.utilization_gpu is None else t.utilization_gpu / 100.0),
                (self.gpu_memory_used, t.memory_used_bytes),
                (self.gpu_dbe, t.ecc_volatile_dbe),
            ):
                if value is not None:
                    gauge.labels(*labels).set(value)
