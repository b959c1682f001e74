"""A simulated cluster in a process of its own: ``python -m tau_tui.core.sim.process_server``.

A real cluster's controllers never share the app's interpreter; in one process the simulated ones
did (half a second of CPU a tick at the ``large`` size, a third of the time), and everything the
app's UI thread did waited for them. Here the world, its real-time ticker and one :class:`SimulatedBackend`
per session run in this process; the app's process gets each session's cache writes
(``cache_relay.py``) and calls the backend's primitives (``process_wire.py``).

The first line of standard input is the spec (JSON: ``factory`` "module:function" and its ``args``
and ``kwargs``, ``realtime``, ``tick_seconds``, ``socket``, ``authkey``, ``sys_path``); the process
answers one JSON line on standard output (``{"ready": true}`` or ``{"error": ...}``) and ends when
its standard input closes, so it never outlives the app that started it."""

from __future__ import annotations

import gc
import importlib
import itertools
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection, Listener
from typing import Any

from tau_tui.core.cluster.errors import ClusterError
from tau_tui.core.cluster.logspool.log_requests import ExecRequest
from tau_tui.core.cluster.shared_values import SharedValues
from tau_tui.core.sim.backend import SimulatedBackend
from tau_tui.core.sim.cache_relay import RelayedCache, relay_messages
from tau_tui.core.sim.process_wire import (
    CALL,
    CONTROL,
    LOG,
    SESSION_CALLS,
    WATCH,
    WORLD_CALLS,
    encode_error,
)
from tau_tui.core.sim.world import RealtimeTicker, SimulatedCluster

#: The real-time tickers start when the app says its first list is in (a CONTROL note), or this
#: long after the first session began.
TICKERS_AT_THE_LATEST_S = 60.0


class ClusterServer:
    def __init__(self, worlds: Mapping[str, SimulatedCluster], realtime: bool, tick_seconds: float) -> None:
        self.worlds = dict(worlds)
        self.world = next(iter(self.worlds.values()))
        self.realtime = realtime
        self.tick_seconds = tick_seconds
        self._sessions: dict[int, tuple[SimulatedBackend, RelayedCache]] = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._tickers: list[RealtimeTicker] = []

    def start_clocks(self) -> None:
        """Real time: every world continues from its simulated now at wall-clock speed."""
        if self.realtime:
            for world in self.worlds.values():
                world.continue_in_real_time()

    def start_tickers(self) -> None:
        """Once the app's cache holds the first session's first list (one process starts its ticker
        after the backend's first sync too): before, a tick would only compete with that list for
        the processor."""
        with self._lock:
            if not self.realtime or self._tickers:
                return
            self._tickers = [RealtimeTicker(world, self.tick_seconds) for world in self.worlds.values()]
        for ticker in self._tickers:
            ticker.start()

    def serve(self, listener: Listener) -> None:
        while True:
            try:
                conn = listener.accept()
            except Exception as err:  # a client that failed the key's challenge or hung up: the next one
                print(f"tau-sim: a connection was refused: {type(err).__name__}: {err}", file=sys.stderr)
                continue
            threading.Thread(target=self._serve_connection, args=(conn,), name="tau-sim-conn", daemon=True).start()

    def _serve_connection(self, conn: Connection) -> None:
        try:
            hello = conn.recv()
            role = hello[0]
            if role == WATCH:
                self._watch(conn, *hello[1:])
            elif role == CALL:
                self._calls(conn)
            elif role == LOG:
                self._log(conn, *hello[1:])
            elif role == CONTROL:
                self._control(conn)
        except (EOFError, OSError):
            pass
        except Exception as err:  # this connection's end; the others and the process go on
            print(f"tau-sim: a connection failed: {type(err).__name__}: {err}", file=sys.stderr)
            try:
                conn.send(("err", encode_error(err)))
            except Exception:  # noqa: BLE001  (the connection itself is what failed)
                pass
        finally:
            conn.close()

    # -- sessions --------------------------------------------------------------

    def _watch(self, conn: Connection, identity: str | None, namespace: str | None, context: str | None) -> None:
        """A new backend session: send its number, then every write of its cache, until the app goes."""
        backend = SimulatedBackend(self.worlds, identity=identity, namespace=namespace, context=context)
        cache = RelayedCache(lambda: backend.world.now())
        backend.cache = cache  # type: ignore[assignment]  # it makes only ObjectCache's writes, relayed
        backend.on_batch_end = cache.end_batch
        with self._lock:
            number = next(self._numbers)
            self._sessions[number] = (backend, cache)
        try:
            conn.send((number, self.realtime, backend.world.now(), time.monotonic()))
            backend.start()
            at_the_latest = threading.Timer(TICKERS_AT_THE_LATEST_S, self.start_tickers)  # should the note never come
            at_the_latest.daemon = True
            at_the_latest.start()
            shared = SharedValues()  # this session's sender's own: the copies it makes are never changed
            while (ops := cache.take()) is not None:
                for message in relay_messages(ops, shared):
                    send_relayed(conn, message)
        finally:
            with self._lock:
                self._sessions.pop(number, None)
            cache.close()
            backend.close()

    def _calls(self, conn: Connection) -> None:
        while True:
            session, name, args = conn.recv()
            try:
                result = self._world_call(name, args) if session is None else self._session_call(session, name, args)
            except Exception as err:  # every failure goes back to the caller, never ends this process
                conn.send(("err", encode_error(err), self._marks()))
                continue
            try:
                conn.send(("ok", result, self._marks()))
            except (OSError, EOFError):
                raise
            except Exception as err:  # an answer that cannot be sent (not picklable): say so instead
                conn.send(("err", encode_error(err), self._marks()))

    def _session_call(self, session: int, name: str, args: tuple[Any, ...]) -> Any:
        if name not in SESSION_CALLS:
            raise ClusterError(f"the simulated cluster has no call {name!r}")
        backend, cache = self._session(session)
        if name == "close":
            backend.close()
            cache.close()
            return None
        value = getattr(backend, name)
        return value(*args) if callable(value) else value

    def _world_call(self, name: str, args: tuple[Any, ...]) -> Any:
        if name not in WORLD_CALLS:
            raise ClusterError(f"the simulated world has no call {name!r}")
        target: Any = self.world
        for part in name.split("."):
            target = getattr(target, part)
        return target(*args)

    def _marks(self) -> dict[int, int]:
        """Each session's last marked batch: a caller waits until its cache has it."""
        with self._lock:
            sessions = list(self._sessions.items())
        return {number: cache.seq for number, (_, cache) in sessions}

    def _session(self, number: int) -> tuple[SimulatedBackend, RelayedCache]:
        with self._lock:
            session = self._sessions.get(number)
        if session is None:
            raise ClusterError("this session of the simulated cluster is closed")
        return session

    # -- logs and notes ------------------------------------------------------------

    def _log(self, conn: Connection, session: int, request: Any) -> None:
        """One container log (or a command's output, for an ExecRequest): chunks until it ends; the
        app's ("close",) or its going stops it."""
        try:
            backend = self._session(session)[0]
            reader = backend.open_pod_exec(request) if isinstance(request, ExecRequest) else backend.open_container_log(request)
        except Exception as err:
            conn.send(("err", encode_error(err)))
            return
        conn.send(("ok",))
        threading.Thread(target=self._close_on_request, args=(conn, reader), name="tau-sim-log-close", daemon=True).start()
        try:
            for chunk in reader:
                conn.send(("data", chunk))
        except Exception as err:
            conn.send(("err", encode_error(err)))
            return
        conn.send(("end",))

    @staticmethod
    def _close_on_request(conn: Connection, reader: Any) -> None:
        try:
            conn.recv()
        except (EOFError, OSError):
            pass
        reader.close()

    def _control(self, conn: Connection) -> None:
        while True:
            verb, value = conn.recv()
            if verb == "foreground_busy":
                for world in self.worlds.values():
                    world.foreground_busy_until = max(world.foreground_busy_until, float(value))
            elif verb == "synced":
                self.start_tickers()


def send_relayed(conn: Connection, message: list[Any]) -> None:
    """Send one message of relayed writes. Stored objects are never changed in place, so pickling
    outside the world's lock is safe; should one still change under it (a dict resized), that
    pickle fails before anything is written, and is made again."""
    for attempt in range(3):
        try:
            conn.send(message)
            return
        except (OSError, EOFError):
            raise
        except RuntimeError:
            if attempt == 2:
                raise
            time.sleep(0.01)


def _end_when_stdin_closes(folder: str) -> None:
    """The app's end (or its crash) closes our standard input: end with it, and take the socket's
    folder along (the app removes it too when it can)."""
    try:
        while sys.stdin.buffer.read(65536):
            pass
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(0)


def _build(spec: Mapping[str, Any]) -> Mapping[str, SimulatedCluster]:
    module_name, _, function_name = str(spec["factory"]).partition(":")
    factory = getattr(importlib.import_module(module_name), function_name)
    built = factory(*spec.get("args", ()), **spec.get("kwargs", {}))
    return {built.settings.context: built} if isinstance(built, SimulatedCluster) else dict(built)


def main() -> None:
    # The answer goes on the real standard output; the process's own fd 1 becomes its log (fd 2),
    # so nothing printed later can fill the app's pipe or reach its terminal.
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    spec = json.loads(sys.stdin.readline())
    for entry in reversed(spec.get("sys_path", ())):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    gc.disable()  # building a large world's million objects: no collection can free any of them
    try:
        server = ClusterServer(_build(spec), bool(spec.get("realtime")), float(spec.get("tick_seconds", 1.0)))
        listener = Listener(spec["socket"], family="AF_UNIX", authkey=bytes.fromhex(spec["authkey"]))
    except ClusterError as err:
        answer.write(json.dumps({"error": err.message, "cluster_error": True}) + "\n")
        answer.flush()
        return
    except Exception as err:
        answer.write(json.dumps({"error": f"{type(err).__name__}: {err}", "cluster_error": False}) + "\n")
        answer.flush()
        return
    gc.freeze()  # the built world lives as long as the process: no collection walks it again
    gc.enable()
    threading.Thread(target=_end_when_stdin_closes, args=(os.path.dirname(spec["socket"]),), name="tau-sim-stdin",
                     daemon=True).start()
    server.start_clocks()
    answer.write(json.dumps({"ready": True}) + "\n")
    answer.close()
    server.serve(listener)


if __name__ == "__main__":
    main()
