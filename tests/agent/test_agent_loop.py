"""The real loop: Agent.run and the XID watcher on their own threads, with the real clock."""

from __future__ import annotations

import threading
import time

from tau_agent.agent import Agent
from tau_agent.call_guard import CallGuard
from tau_agent.collector import Collector
from tau_agent.nvml_reader import NvmlReader
from tau_agent.xid_watcher import XidWatcher
from tau_gpuhealth.verdicts import Verdict

from .fake_nvml import FakeNvml, h100_node
from .sim import RecordingWriter, fast_config


def test_run_loop_wakes_on_xid_and_reports():
    nvml = FakeNvml(h100_node(2))
    config = fast_config(intervals={"xid_wait_ms": 50, "call_timeout_s": 1})
    reader = NvmlReader(nvml)
    collector = Collector(reader, CallGuard(1.0), boot_id=lambda: "boot")
    writer = RecordingWriter(clock=time.time)
    watcher = XidWatcher(reader, wait_ms=config.intervals.xid_wait_ms)
    agent = Agent(config, collector, writer, node_name="n1", xids=watcher)
    watcher.on_xid = agent.wake.set
    stop = threading.Event()
    loop = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    watcher.start()
    loop.start()
    try:
        deadline = time.monotonic() + 5
        while agent.health is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert agent.health is not None and agent.health.verdict is Verdict.HEALTHY
        nvml.emit_xid(1, 79)
        nvml.gpus[1].lost = True
        deadline = time.monotonic() + 5
        while agent.health.verdict is not Verdict.UNHEALTHY and time.monotonic() < deadline:
            time.sleep(0.01)
        assert agent.health.verdict is Verdict.UNHEALTHY  # well before the 15 s poll interval
        assert writer.times("conditions")  # initial report went out (no startup delay)
    finally:
        stop.set()
        agent.wake.set()
        watcher.stop()
        loop.join(5)
    assert not loop.is_alive()
