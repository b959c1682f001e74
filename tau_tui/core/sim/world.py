"""The simulated world: the API store, the clock, and the controllers that
behave like Kueue, MultiKueue, the Job and RayJob controllers, the scheduler
and kubelets, the GPU node agent and the Tau controller (``controllers/``),
advanced in ticks of an injectable clock.

Deterministic: names and UIDs come from one seeded RNG, time only from the
clock, controllers run in a fixed order and visit objects in sorted order."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from tau_tui.core.cluster.clock import Clock, ContinuingClock, ManualClock
from tau_tui.core.cluster.convert import format_time
from tau_tui.core.cluster.kinds import ResourceKind
from tau_tui.core.pacing import give_way
from tau_tui.core.sim.controllers.gc import GarbageCollector
from tau_tui.core.sim.controllers.gpu_agent import GpuAgent
from tau_tui.core.sim.controllers.jobs import JobController
from tau_tui.core.sim.controllers.kubelet import Kubelet
from tau_tui.core.sim.controllers.kueue import KueueController
from tau_tui.core.sim.controllers.multikueue import MultiKueueController
from tau_tui.core.sim.controllers.tau import TauController
from tau_tui.core.sim.settings import SimSettings
from tau_tui.core.sim.simlogs import ContainerLog
from tau_tui.core.sim.store import SimStore

R = ResourceKind
MAX_EVENTS = 1500


class SimulatedCluster:
    def __init__(self, clock: Clock, seed: int = 1, settings: SimSettings | None = None):
        self.clock = clock
        self.settings = settings or SimSettings()
        self.store = SimStore(seed, lambda: self.clock.now())
        self.lock = self.store.lock
        self._timeline: list[tuple[datetime, Callable[[], object]]] = []
        self.kueue = KueueController(self)
        self.multikueue = MultiKueueController(self)
        self.jobs = JobController(self)
        self.kubelet = Kubelet(self)
        self.gpu_agent = GpuAgent(self)
        self.tau = TauController(self)
        self.gc = GarbageCollector(self)
        self.store.admission_hooks.append(self.kueue.webhook)
        self.store.delete_hooks.append(self.gc.on_delete)
        self.store.validators.append(self.kueue.validate)
        self.ticks = 0
        #: Until when (monotonic) the foreground of the app on this world wants the interpreter: the
        #: real-time ticker holds its next tick until then, for at most MAX_TICK_HOLD_S at a time. A
        #: real cluster's controllers do not share the app's interpreter; the simulated ones do.
        self.foreground_busy_until = 0.0
        #: How a tick sleeps while giving way to the foreground, and the clock the foreground's hold
        #: is compared with (tests give both).
        self.pause: Callable[[float], None] = time.sleep
        self.monotonic: Callable[[], float] = time.monotonic
        #: Called after every tick, outside the lock (a backend marks where its cache's batch ends).
        self.tick_listeners: list[Callable[[], None]] = []
        #: API outage injection: while ``api_down`` holds a message, attached
        #: backends stop receiving changes and report reconnecting/stale.
        self.api_down: str | None = None
        self.api_down_stale = False
        #: Called (outside the lock) when the outage state changes.
        self.connectivity_listeners: list[Callable[[], None]] = []
        #: Fault injection and logs, offered here, done by the controller that owns them.
        self.gpu_fault = self.gpu_agent.gpu_fault
        self.disrupt_pod = self.kubelet.disrupt_pod
        self.gpu_recover = self.gpu_agent.gpu_recover
        self.set_multikueue_cluster_active = self.multikueue.set_cluster_active
        self.open_container_log = self.kubelet.open_container_log
        self.open_pod_exec = self.kubelet.open_pod_exec
        self.write_log = self.kubelet.write_log
        self.break_log_streams = self.kubelet.break_log_streams

    @property
    def logs(self) -> dict[tuple[str, str, str, bool], ContainerLog]:
        return self.kubelet.logs

    # -- time ----------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def continue_in_real_time(self) -> None:
        """From its simulated now on, this world's time runs with the wall clock (the demo)."""
        if isinstance(self.clock, ManualClock):
            self.clock = ContinuingClock(self.clock.now())

    def advance(self, seconds: float, step: float = 1.0) -> None:
        """Move a ManualClock forward, ticking every ``step`` seconds."""
        if not isinstance(self.clock, ManualClock):
            raise RuntimeError("advance() needs a ManualClock; a real-time simulation ticks by itself")
        left = seconds
        while left > 1e-9:
            delta = min(step, left)
            self.clock.advance(delta)
            left -= delta
            self.tick()

    def at(self, offset_seconds: float, action: Callable[[], object]) -> None:
        """Schedule a timeline action ``offset_seconds`` from now."""
        with self.lock:
            self._timeline.append((self.now() + timedelta(seconds=offset_seconds), action))
            self._timeline.sort(key=lambda item: item[0])

    # -- API outage (fault injection) ----------------------------------------

    def api_outage(self, message: str = "dial tcp 127.0.0.1:6443: connect: connection refused", stale: bool = False) -> None:
        """The API server stops answering: backends keep their last data and
        report reconnecting (or, with ``stale``, stale) since now."""
        self._set_api_down(message, stale)

    def api_restore(self) -> None:
        self._set_api_down(None, False)

    def _set_api_down(self, message: str | None, stale: bool) -> None:
        with self.lock:
            self.api_down = message
            self.api_down_stale = stale
            listeners = list(self.connectivity_listeners)
        for listener in listeners:  # outside the lock: listeners read the world back
            listener()

    # -- the tick ------------------------------------------------------------

    def tick(self) -> None:
        with self.lock:
            now = self.now()
            self.ticks += 1
            while self._timeline and self._timeline[0][0] <= now:
                _, action = self._timeline.pop(0)
                action()
            # One pass of every controller, in the order a change flows through
            # the cluster; the order is part of the simulation's determinism.
            steps: tuple[Callable[[], object], ...] = (
                self.kueue.reconcile_owners, self.multikueue.update_clusters,
                self.multikueue.update_admission_checks, self.kueue.stop_policies, self.kueue.schedule,
                self.multikueue.dispatch, self.multikueue.sync_remote, self.jobs.start_admitted,
                self.kubelet.bind_and_run_pods, lambda: self.kubelet.finish_pods(now), self.jobs.finish_jobs,
                self.kueue.queue_status, lambda: self.gpu_agent.heartbeat(now), self.tau.update_status)
            gave_way = 0.0
            for step in steps:
                step()
                # while the foreground is busy, sleep between controllers so it runs alone: a tick
                # at ``large`` is about half a second of CPU
                gave_way += give_way(lambda: self.foreground_busy_until, MAX_STEP_HOLD_S - gave_way, self.pause,
                                     self.monotonic)
            self.store.changed.notify_all()
        for listener in list(self.tick_listeners):
            listener()

    # -- events ----------------------------------------------------------------

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if not self.settings.events:
            return
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        if self.store.read(R.NAMESPACE.type, ns) is None:
            return
        now = format_time(self.now())
        name = f"{meta.get('name', 'x')}.{self.store.rand5()}{self.store.rand5()}"
        self.store.put(R.EVENT.type, {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": obj.get("kind"), "name": meta.get("name"), "namespace": meta.get("namespace"),
                               "uid": meta.get("uid"), "apiVersion": obj.get("apiVersion")},
            "type": type_, "reason": reason, "message": message, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "tau-sim"},
        })
        events = self.store.bucket(R.EVENT.type)
        while len(events) > MAX_EVENTS:
            (old_ns, old_name) = next(iter(events))
            self.store.remove(R.EVENT.type, old_name, old_ns)


#: The longest the simulated cluster stands still for a foreground that stays busy.
MAX_TICK_HOLD_S = 2.0
#: The longest one tick waits between its controllers for a busy foreground, all waits together
#: (the foreground may renew its claim before the last one ends).
MAX_STEP_HOLD_S = 1.0


class RealtimeTicker(threading.Thread):
    """Ticks a simulation against the wall clock (``tau-tui --demo``)."""

    def __init__(self, world: SimulatedCluster, interval: float = 1.0, on_tick: Callable[[], None] | None = None):
        super().__init__(name="tau-sim-ticker", daemon=True)
        self.world = world
        self.interval = interval
        self.on_tick = on_tick
        self._stopping = threading.Event()
        #: The clock the foreground's hold is compared with (tests give their own).
        self.monotonic: Callable[[], float] = time.monotonic

    def run(self) -> None:
        wait = self.interval
        while not self._stopping.wait(wait):
            if self._hold_for_foreground():
                return
            started = time.monotonic()
            self.world.tick()
            if self.on_tick is not None:
                self.on_tick()
            # A big scenario may tick slower than the interval: keep the UI
            # thread room by waiting at least twice the tick's own cost.
            wait = max(self.interval, 2 * (time.monotonic() - started))

    def _hold_for_foreground(self) -> bool:
        """Wait while the foreground is busy (never past MAX_TICK_HOLD_S in a row); True when stopped meanwhile."""
        held = 0.0
        while held < MAX_TICK_HOLD_S:
            left = min(self.world.foreground_busy_until - self.monotonic(), MAX_TICK_HOLD_S - held)
            if left <= 0:
                return False
            if self._stopping.wait(left):
                return True
            held += left
        return False

    def stop(self) -> None:
        self._stopping.set()
