"""Container logs of simulated pods.

Each container log is an append-only byte buffer of kubelet-style lines
(``<RFC3339Nano> text``).  Generated workload output is materialised lazily
up to the simulated "now", so 20,000 idle pods cost nothing."""

from __future__ import annotations

import bisect
import json
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from tau_tui.core.cluster.logspool.log_requests import LogChunkRequest
from tau_tui.core.cluster.logspool.timestamps import format_timestamp_ns


def to_ns(t: datetime) -> int:
    return int(t.timestamp()) * 1_000_000_000 + t.microsecond * 1000


@dataclass
class ContainerLog:
    data: bytearray = field(default_factory=bytearray)
    line_ns: list[int] = field(default_factory=list)  # timestamp of each line start
    line_off: list[int] = field(default_factory=list)  # byte offset of each line start
    partial: bool = False  # last line has no newline yet
    # generator
    style: str = "train"
    seed: int = 0
    start_ns: int = 0
    interval_ns: int = 2_000_000_000
    end_ns: int | None = None  # container stopped (no more generated lines)
    next_index: int = 0
    finished: bool = False
    final_lines: tuple[str, ...] = ()

    def write(self, ts_ns: int, text: str, newline: bool = True) -> None:
        if not self.partial:
            self.line_ns.append(ts_ns)
            self.line_off.append(len(self.data))
            self.data += format_timestamp_ns(ts_ns).encode() + b" "
        self.data += text.encode("utf-8", "replace")
        if newline:
            self.data += b"\n"
        self.partial = not newline

    def materialize(self, now_ns: int) -> None:
        limit = now_ns if self.end_ns is None else min(now_ns, self.end_ns)
        while self.start_ns + self.next_index * self.interval_ns <= limit and not self.finished:
            ts = self.start_ns + self.next_index * self.interval_ns + (self.seed % 997) * 1000 + 7
            self.write(ts, generated_line(self.style, self.seed, self.next_index))
            self.next_index += 1
            if self.next_index > 200_000:  # a bound on any one simulated log
                break

    def stop(self, at_ns: int, lines: tuple[str, ...] = ()) -> None:
        """The container ended at ``at_ns``: write its last lines."""
        self.materialize(at_ns)
        if self.partial:
            self.data += b"\n"
            self.partial = False
        for i, text in enumerate(lines):
            self.write(at_ns + i * 1000 + 1, text)
        self.end_ns = at_ns
        self.finished = True


def generated_line(style: str, seed: int, index: int) -> str:
    rng = random.Random(seed * 1_000_003 + index)
    if style == "ray-driver":  # what `ray job logs` prints: the entrypoint's output and Ray Train's
        return ray_driver_line(rng, seed, index)
    if index == 0:
        return {
            "ray-head": "Ray runtime started. Dashboard at http://127.0.0.1:8265",
            "ray-worker": "Ray worker node connected to head",
            "init": "fetching dataset shards from blob storage",
        }.get(style, "[rank 0] torchrun: world size 8, NCCL 2.21.5 initialised")
    if style == "init":
        return f"downloaded shard {index}/8 ({rng.randint(200, 900)} MiB)"
    if style == "ray-head":
        return f"(raylet) task {index}: {rng.choice(['train_step', 'eval_batch', 'checkpoint'])} finished in {rng.uniform(0.5, 9):.2f}s"
    if style == "ray-worker":
        return f"(worker) step {index} tokens/s={rng.randint(9000, 14000)}"
    if style == "json":  # structured logging, one JSON object per line
        record = {"level": "warning" if index % 23 == 0 else "info", "logger": "nccl_check", "step": index,
                  "msg": "allreduce slow" if index % 23 == 0 else "allreduce ok",
                  "busbw_gbps": round(rng.uniform(310, 390), 1), "ranks": 8,
                  "sizes": {"bytes": 1 << (20 + index % 8), "count": rng.randint(1, 4)}}
        return json.dumps(record, separators=(",", ":"))
    loss = 2.8 * (0.995**index) + rng.uniform(-0.02, 0.02)
    if index % 50 == 0:
        return f"[rank 0] step {index} checkpoint saved to /mnt/checkpoints/step-{index:06d}"
    if index % 37 == 0:
        return f"[rank {rng.randint(0, 7)}] WARNING [bold]dataloader[/bold] slow: {rng.uniform(1, 4):.1f}s (text is never markup)"
    return f"[rank 0] step {index} loss={loss:.4f} lr=3.0e-4 grad_norm={rng.uniform(0.1, 2.0):.3f} gpu_util={rng.randint(85, 99)}%"


def ray_driver_line(rng: random.Random, seed: int, index: int) -> str:
    ip = f"10.244.{seed % 7}.{10 + seed % 90}"
    if index == 0:
        return f"Connecting to existing Ray cluster at address: {ip}:6379..."
    if index == 1:
        return f"Connected to Ray cluster. View the dashboard at http://{ip}:8265"
    if index == 2:
        return "ScalingConfig(num_workers=2, use_gpu=True): starting the trainer"
    worker = f"(RayTrainWorker pid={4000 + seed % 900 + index % 2}, ip=10.244.{seed % 7}.{11 + index % 2})"
    if index % 25 == 0:
        return f"{worker} Checkpoint saved to /mnt/checkpoints/iter-{index:05d} (driver reports it)"
    loss = 0.35 + 2.1 * (0.997**index) + rng.uniform(-0.01, 0.01)
    return f"{worker} [rank {index % 2}] iter {index} loss={loss:.4f} throughput={rng.randint(900, 1300)} samples/s"


class SimLogReader:
    """One log request; iterable of byte chunks, closable from another thread."""

    def __init__(
        self,
        log: ContainerLog,
        request: LogChunkRequest,
        lock: threading.RLock,
        changed: threading.Condition,
        now_ns: Callable[[], int],
        break_generation: Callable[[], int],
        container_done: Callable[[], bool],
    ):
        self.log = log
        self.request = request
        self.lock = lock
        self.changed = changed
        self.now_ns = now_ns
        self.break_generation = break_generation
        self.container_done = container_done
        self.closed = False
        self._gen = break_generation()

    def close(self) -> None:
        self.closed = True

    def _start_offset(self) -> int:
        log, req = self.log, self.request
        start_line = 0
        if req.since_time is not None:
            start_line = bisect.bisect_left(log.line_ns, to_ns(req.since_time))
        elif req.since_seconds is not None:
            start_line = bisect.bisect_left(log.line_ns, self.now_ns() - req.since_seconds * 1_000_000_000)
        if req.tail_lines is not None:
            start_line = max(start_line, len(log.line_ns) - req.tail_lines)
        return log.line_off[start_line] if start_line < len(log.line_off) else len(log.data)

    def __iter__(self) -> Iterator[bytes]:
        with self.lock:
            self.log.materialize(self.now_ns())
            pos = self._start_offset()
        while not self.closed:
            with self.changed:
                if self.break_generation() != self._gen:
                    raise ConnectionResetError("simulated log stream broken")
                self.log.materialize(self.now_ns())
                data = bytes(self.log.data[pos:])
                done = self.container_done()
                if not data:
                    if not self.request.follow or done:
                        return
                    self.changed.wait(0.05)
                    continue
            pos += len(data)
            yield data
