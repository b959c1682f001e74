"""A ClusterBackend that plays a recording back (``tau-tui --replay FILE``), read-only.

The recorded cache writes are applied to an :class:`ObjectCache` of its own, so every pane
reads views built exactly as the live app built them; queue positions come from the recorded
visibility answers.  Time is the :class:`ReplayClock`'s: paused at the start, then played
(``play``, speed), stepped record by record or seeked, through the keyframe before the wanted
time.  Every mutation is refused with a message naming the recording; logs are not part of a
recording."""

from __future__ import annotations

import builtins
import dataclasses
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from tau_tui.core.cluster.api_failure import ApiFailure
from tau_tui.core.cluster.cache import ObjectCache
from tau_tui.core.cluster.changes import ViewStatus
from tau_tui.core.cluster.common import BaseBackend
from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.kinds import ResourceKind, ResourceType
from tau_tui.core.cluster.logspool.log_requests import ExecRequest, LogChunkRequest, LogRequest
from tau_tui.core.cluster.logspool.stream import ClosableIterator, LogStream
from tau_tui.core.cluster.mutations import DrainResult, MutationResult, StopPolicy
from tau_tui.core.cluster.positions import PositionReport
from tau_tui.core.operations.recording import format as fmt
from tau_tui.core.operations.recording.player import ReplayPlayer
from tau_tui.core.operations.recording.reader import RecordingReader
from tau_tui.core.operations.recording.replay_clock import ReplayClock, ReplayStatus, parse_seek


class ReplayBackend(BaseBackend):
    """Plays ``reader``'s recording.  ``realtime``: a player thread moves the clock while playing
    (the app); without it only :meth:`seek`, :meth:`step` and :meth:`play_for` move it (tests)."""

    #: Its visibility answers are the recorded ones: each is asked for.
    visibility_absent_for_s = 0.0

    def __init__(self, reader: RecordingReader, *, realtime: bool = False) -> None:
        self.reader = reader
        self.clock = ReplayClock(reader.start, reader.end)
        self.realtime = realtime
        header = reader.header
        self._context: str | None = header.get("context")
        self._contexts: list[str] = list(header.get("contexts") or ([self._context] if self._context else []))
        self._recorded_namespace: str | None = header.get("namespace")
        self._namespace_filter: str | None = None
        self._identity: dict[str, Any] | None = header.get("identity")
        self._lock = threading.RLock()
        self._member = -1
        self._records: list[dict[str, Any]] = []
        self._cursor = 0
        self._visibility: dict[str, tuple[list[dict[str, Any]] | None, str]] = {}
        self._player: ReplayPlayer | None = None
        #: Seeks and steps so far: readers that keep answers of their own (queue positions) re-read after one.
        self.jumps = 0
        super().__init__(ObjectCache(self.clock.now))

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, realtime: bool = False) -> ReplayBackend:
        """Raises :class:`RecordingError` naming the file when it cannot be replayed."""
        return cls(RecordingReader(path), realtime=realtime)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._member < 0:
                self._goto(self.clock.start)
        if self.realtime and self._player is None:
            self._player = ReplayPlayer(self)
            self._player.start()

    def close(self) -> None:
        player, self._player = self._player, None
        if player is not None:
            player.stop()

    def wait_synced(self, timeout: float = 30.0, kinds: Iterable[ResourceKind] | None = None) -> bool:
        return self._member >= 0

    # -- controls -------------------------------------------------------------------------

    def status(self) -> ReplayStatus:
        clock = self.clock
        return ReplayStatus(self.reader.path.name, fmt.instant(clock.position), fmt.instant(clock.start),
                            fmt.instant(clock.end), clock.speed, clock.paused, self.reader.truncated)

    def play(self) -> None:
        if self.clock.position >= self.clock.end:
            self.seek_seconds(self.clock.start)  # played to the end: play it again
        self.clock.paused = False

    def pause(self) -> None:
        self.clock.paused = True

    def toggle_pause(self) -> bool:
        """Play or pause; returns True when now paused."""
        if self.clock.paused:
            self.play()
        else:
            self.pause()
        return self.clock.paused

    def faster(self) -> float:
        return self.clock.faster()

    def slower(self) -> float:
        return self.clock.slower()

    def play_for(self, wall_seconds: float) -> None:
        """Advance as playing for ``wall_seconds`` at the current speed (the player thread's tick)."""
        with self._lock:
            target = self.clock.target_after(wall_seconds)
            if target is None:
                return
            self._goto(target)
            if target >= self.clock.end:
                self.clock.paused = True

    def seek(self, text: str) -> datetime:
        """``:seek TEXT`` (see :func:`parse_seek`); raises ValueError saying what to type."""
        clock = self.clock
        return self.seek_seconds(parse_seek(text, clock.position, clock.start, clock.end))

    def seek_seconds(self, t: float) -> datetime:
        with self._lock:
            self._goto(t)
            self.jumps += 1
        return self.clock.now()

    def step(self, direction: int = 1) -> datetime:
        """Pause and move to the next (``1``) or previous (``-1``) recorded change."""
        self.clock.paused = True
        with self._lock:
            here = self.clock.position
            target = self._next_time(here) if direction > 0 else self._previous_time(here)
            if target is not None:
                self._goto(target)
                self.jumps += 1
        return self.clock.now()

    def _next_time(self, here: float) -> float | None:
        member = self.reader.member_at(here)
        while member < len(self.reader.members):
            records = self._records if member == self._member else self.reader.member_records(member)
            for record in records[1:]:
                if record["t"] > here:
                    return float(record["t"])
            member += 1
            if member < len(self.reader.members) and self.reader.members[member].first_t > here:
                return self.reader.members[member].first_t
        return None

    def _previous_time(self, here: float) -> float | None:
        member = self.reader.member_at(here)
        while member >= 0:
            records = self._records if member == self._member else self.reader.member_records(member)
            earlier = [float(r["t"]) for r in records if r["t"] < here]
            if earlier:
                return max(earlier)
            member -= 1
        return None

    # -- applying the recording ----------------------------------------------------------------

    def _goto(self, t: float) -> None:
        """Stand at ``t``: from the keyframe before it when moving back or past this member,
        else on from the records not yet applied (call with the lock held)."""
        t = self.clock.move_to(t)
        member = self.reader.member_at(t)
        if member != self._member or t < self._applied_until():
            self._records = self.reader.member_records(member)
            self._member = member
            self._load_keyframe(self._records[0])
            self._cursor = 1
        while self._cursor < len(self._records) and self._records[self._cursor]["t"] <= t:
            self._apply(self._records[self._cursor])
            self._cursor += 1

    def _applied_until(self) -> float:
        if self._member < 0:
            return float("-inf")
        return float(self._records[self._cursor - 1]["t"]) if self._cursor > 0 else float("-inf")

    def _in_scope(self, kind: ResourceKind, obj: Mapping[str, Any]) -> bool:
        ns = self._namespace_filter
        return ns is None or not kind.type.namespaced or (obj.get("metadata") or {}).get("namespace") == ns

    def _load_keyframe(self, record: Mapping[str, Any]) -> None:
        raw: Mapping[str, list[dict[str, Any]]] = record.get("raw") or {}
        states: Mapping[str, list[Any]] = record.get("states") or {}
        for kind in ResourceKind:
            self.cache.replace(kind, [obj for obj in raw.get(kind.name, ()) if self._in_scope(kind, obj)])
            state = states.get(kind.name)
            if state is not None:
                self.cache.set_state(kind, ViewStatus(state[0]), state[1] or "")
        self.cache.set_connection(fmt.decode_connection(record["connection"]))
        pods = record.get("pods")
        self.cache.replace_pod_allocations(
            None if pods is None else {fmt.decode_key(k): alloc for k, v in pods.items()
                                       if (alloc := fmt.decode_allocation(v)) is not None})
        self._visibility = {suffix: (answer.get("items"), answer.get("why") or "")
                            for suffix, answer in (record.get("visibility") or {}).items()}
        self.tracker.restore(fmt.decode_histories(record.get("positions") or {}))
        self._set_scope(record.get("scope") or {})

    def _set_scope(self, scope: Mapping[str, Any]) -> None:
        self._context = scope.get("context", self._context)
        self._recorded_namespace = scope.get("namespace", self._recorded_namespace)

    def _apply(self, record: Mapping[str, Any]) -> None:
        op = record["op"]
        kind = fmt.kind_named(record.get("kind", ""))
        if op == fmt.REPLACE and kind is not None:
            self.cache.replace(kind, [obj for obj in record["items"] if self._in_scope(kind, obj)])
        elif op == fmt.APPLY and kind is not None:
            if self._in_scope(kind, record["obj"]):
                self.cache.apply(kind, record["event"], record["obj"])
        elif op == fmt.CLEAR and kind is not None:
            self.cache.clear(kind, ViewStatus(record["status"]), record.get("message") or "")
        elif op == fmt.STATE and kind is not None:
            self.cache.set_state(kind, ViewStatus(record["status"]), record.get("message") or "")
        elif op == fmt.CONNECTION:
            self.cache.set_connection(fmt.decode_connection(record))
        elif op == fmt.PODS:
            pods = record.get("allocations")
            self.cache.replace_pod_allocations(
                None if pods is None else {fmt.decode_key(k): alloc for k, v in pods.items()
                                           if (alloc := fmt.decode_allocation(v)) is not None})
        elif op == fmt.POD:
            self.cache.set_pod_allocation(fmt.decode_key(record["key"]), fmt.decode_allocation(record.get("allocation")))
        elif op == fmt.VISIBILITY:
            self._visibility[record["suffix"]] = (record.get("items"), record.get("why") or "")
            self._replay_position_read(record["suffix"], fmt.instant(record["t"]))
        elif op == fmt.SCOPE:
            self._set_scope(record)
        elif op == fmt.KEYFRAME:
            self._load_keyframe(record)

    # -- reads -----------------------------------------------------------------------------

    def _now(self) -> datetime:
        return self.clock.now()

    def contexts(self) -> builtins.list[str]:
        return list(self._contexts)

    @property
    def current_context(self) -> str | None:
        return self._context

    def use_context(self, name: str) -> None:
        if name != self._context:
            raise ClusterError(f"a replay shows the one context it recorded ({self._context}); "
                               f"run tau-tui --context {name} for the live cluster")

    @property
    def namespace(self) -> str | None:
        return self._namespace_filter or self._recorded_namespace

    def use_namespace(self, namespace: str | None) -> None:
        recorded = self._recorded_namespace
        if recorded is not None and namespace not in (None, recorded):
            raise ClusterError(f"the recording covers namespace {recorded} only")
        with self._lock:
            self._namespace_filter = namespace
            self._member = -1  # rebuild from the keyframe with the new scope
            self._goto(self.clock.position)

    def who_am_i(self) -> dict[str, Any] | None:
        return dict(self._identity) if self._identity else None

    def _track_positions(self, report: PositionReport) -> None:
        """Reads in the replay keep no history: it is the recorded session's (``_replay_position_read``)."""

    def _replay_position_read(self, suffix: str, at: datetime) -> None:
        """The live app read a queue's positions here: add them to the history as it did."""
        parts = suffix.split("/")
        if len(parts) == 5 and parts[0] == "namespaces" and parts[2] == "localqueues":
            report = self.pending_positions_local_queue(parts[1], parts[3])
        elif len(parts) == 3 and parts[0] == "clusterqueues":
            report = self.pending_positions_cluster_queue(parts[1])
        else:
            return
        report = dataclasses.replace(report, at=at)
        self.tracker.record(report, self._pending_since(report))

    def _visibility_items(self, suffix: str) -> tuple[builtins.list[dict[str, Any]] | None, str]:
        answer = self._visibility.get(suffix)
        if answer is None:
            return None, f"the recording holds no visibility API answer for this queue by {self.clock.now():%H:%M:%S}"
        return answer

    # -- primitives: reads from the replayed cache, writes refused ---------------------------------

    def refusal(self, what: str) -> str:
        return (f"refused: this is a replay of {self.reader.path.name} (read-only); {what} changes nothing. "
                "Run tau-tui without --replay to act on the cluster.")

    def _refused(self, verb: str, kind: str, name: str, namespace: str | None, dry_run: bool) -> MutationResult:
        target = f"{kind} {namespace + '/' if namespace else ''}{name}"
        return MutationResult(False, verb, kind, name, namespace, self.refusal(f"{verb} {target}"), dry_run, code=405)

    def _api_get(self, rt: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        kind = ResourceKind.for_kind(rt.api_version, rt.kind)
        obj = self.cache.raw(kind, name, namespace) if kind is not None else None
        if obj is None:
            raise ApiFailure(404, "NotFound", f"{rt.qualified} {name} is not in the recording at {self.clock.now():%H:%M:%S}")
        return obj

    def _api_list(self, rt: ResourceType, namespace: str | None, label_selector: str | None = None,
                  field_selector: str | None = None) -> builtins.list[dict[str, Any]]:
        kind = ResourceKind.for_kind(rt.api_version, rt.kind)
        if kind is None or label_selector or field_selector:
            raise ApiFailure(501, "NotImplemented", f"a replay answers only from the recorded {rt.qualified}")
        return [obj for view in self.cache.list(kind, namespace) if (obj := self.cache.raw(kind, view.name, view.namespace))]

    def _write_refused(self, what: str) -> ApiFailure:
        return ApiFailure(405, "MethodNotAllowed", self.refusal(what))

    def _api_create(self, rt: ResourceType, namespace: str | None, body: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
        raise self._write_refused(f"create {rt.qualified}")

    def _api_delete(self, rt: ResourceType, name: str, namespace: str | None, dry_run: bool) -> None:
        raise self._write_refused(f"delete {rt.qualified} {name}")

    def _api_patch(self, rt: ResourceType, name: str, namespace: str | None, patch: Mapping[str, Any],
                   dry_run: bool) -> dict[str, Any]:
        raise self._write_refused(f"patch {rt.qualified} {name}")

    def _api_evict(self, name: str, namespace: str, dry_run: bool, grace_period_seconds: int | None) -> None:
        raise self._write_refused(f"evict pod {namespace}/{name}")

    def _visibility_get(self, path: str, query: Mapping[str, Any]) -> dict[str, Any]:
        raise ApiFailure(404, "NotFound", "a replay answers positions from the recording only")

    def open_container_log(self, request: LogChunkRequest) -> ClosableIterator:
        raise ClusterError("logs are not part of a recording: open them on the live cluster")

    def open_pod_exec(self, request: ExecRequest) -> ClosableIterator:
        raise ClusterError("a recording runs no command in a pod: use tau-tui on the live cluster")

    def open_logs(self, request: LogRequest, spool_dir: str | None = None) -> LogStream:
        raise ClusterError(f"logs are not part of a recording ({self.reader.path.name}): "
                           "open them with tau-tui on the live cluster")

    # -- mutations: every one refused, naming the replay ----------------------------------------------

    def submit(self, manifests: Sequence[Mapping[str, Any]], dry_run: bool = False) -> builtins.list[MutationResult]:
        return [self._refused("create", str(m.get("kind", "")), str((m.get("metadata") or {}).get("name", "")),
                              (m.get("metadata") or {}).get("namespace"), dry_run) for m in manifests]

    def cancel(self, kind: ResourceKind, namespace: str, name: str, dry_run: bool = False) -> MutationResult:
        return self._refused("delete", kind.type.kind, name, namespace, dry_run)

    def annotate(self, kind: ResourceKind, namespace: str, name: str, annotations: Mapping[str, str],
                 dry_run: bool = False) -> MutationResult:
        return self._refused("patch", kind.type.kind, name, namespace, dry_run)

    def set_stop_policy(self, kind: ResourceKind, name: str, policy: StopPolicy, namespace: str | None = None,
                        dry_run: bool = False) -> MutationResult:
        return self._refused("patch", kind.type.kind, name, namespace, dry_run)

    def drain_inputs(self, node: str) -> tuple[builtins.list[dict[str, Any]], builtins.list[dict[str, Any]], builtins.list[str]]:
        raise ClusterError(self.refusal(f"drain node {node}"))

    def annotate_node(self, node: str, annotations: Mapping[str, str], dry_run: bool = False) -> MutationResult:
        return self._refused("patch", "Node", node, None, dry_run)

    def cordon(self, node: str, dry_run: bool = False) -> MutationResult:
        return self._refused("cordon", "Node", node, None, dry_run)

    def uncordon(self, node: str, dry_run: bool = False) -> MutationResult:
        return self._refused("uncordon", "Node", node, None, dry_run)

    def drain(self, node: str, dry_run: bool = False, grace_period_seconds: int | None = None) -> DrainResult:
        return DrainResult(node, False, (), (), (self._refused("drain", "Node", node, None, dry_run),), dry_run)

    def create_multikueue_object(self, manifest: Mapping[str, Any], dry_run: bool = False) -> MutationResult:
        return self._refused("create", str(manifest.get("kind", "")),
                             str((manifest.get("metadata") or {}).get("name", "")), None, dry_run)

    def delete_multikueue_object(self, kind: ResourceKind, name: str, dry_run: bool = False) -> MutationResult:
        return self._refused("delete", kind.type.kind, name, None, dry_run)

    def set_multikueue_config_clusters(self, name: str, clusters: Sequence[str], dry_run: bool = False) -> MutationResult:
        return self._refused("patch", "MultiKueueConfig", name, None, dry_run)
