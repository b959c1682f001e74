"""Credentials of the kubernetes client, kept off shared disk and bounded in time.

The kubernetes client turns ``client-key-data``, ``client-certificate-data``,
``certificate-authority-data`` (and an exec plugin's ``clientKeyData``) into
files made with ``tempfile.mkstemp`` in the shared temporary directory and
removes them only at a normal interpreter exit: SIGTERM, SIGHUP or a crash
leave a private key in ``/tmp``.  :func:`harden_kubernetes_client` replaces
that file factory with :func:`private_material_path`, which keeps the bytes in
an anonymous memory file (``memfd_create``) and hands out its
``/proc/self/fd/N`` path: nothing is written to any file system and the
memory goes away with the process however it ends.  Where memfd is missing
(not Linux), the bytes go to a per-process 0700 directory under
``$XDG_RUNTIME_DIR`` (a per-user tmpfs) that is removed at exit and on
SIGTERM/SIGHUP (:func:`tau_tui.core.exit_signals.install_exit_on_signals`).

The client also runs exec credential plugins without a time limit and, when
one fails, only logs it (the request then fails as 401).
:class:`BoundedExecProvider` gives every plugin run a deadline and records the
failure in words (``exec plugin X exited 1: <stderr>``) so callers can report
it; :func:`take_exec_failure` reads it back.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, NoReturn

from kubernetes.config import exec_provider as k8s_exec_provider
from kubernetes.config import kube_config as k8s_kube_config
from kubernetes.config.config_exception import ConfigException

from tau_tui.core.exit_signals import install_exit_on_signals

#: Seconds an exec credential plugin may run (interactive logins need more than a request).
DEFAULT_EXEC_TIMEOUT = 60.0

_lock = threading.Lock()
_material: dict[str, str] = {}  # sha256 of content -> path
_memfds: list[int] = []
_private_dir: Path | None = None
_exec_timeout: float | None = DEFAULT_EXEC_TIMEOUT
_exec_failure: str | None = None
_installed = False


def _memfd_path(content: bytes) -> str | None:
    create = getattr(os, "memfd_create", None)
    if create is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = create("tau-tui-credential", getattr(os, "MFD_CLOEXEC", 1))
    except OSError:
        return None
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view):]
    _memfds.append(fd)  # kept open for the life of the process: the path stays valid
    return f"/proc/self/fd/{fd}"


def private_runtime_dir() -> Path:
    """This process's 0700 directory under ``$XDG_RUNTIME_DIR`` (else the temp dir), removed at exit."""
    global _private_dir
    if _private_dir is None:
        base = os.environ.get("XDG_RUNTIME_DIR")
        if not base or not os.path.isdir(base):
            base = None
        _private_dir = Path(tempfile.mkdtemp(prefix=f"tau-tui-{os.getpid()}-", dir=base))
        os.chmod(_private_dir, 0o700)
        atexit.register(remove_private_runtime_dir)
    return _private_dir


def remove_private_runtime_dir() -> None:
    global _private_dir
    directory, _private_dir = _private_dir, None
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def private_material_path(content: str | bytes, temp_file_path: str | None = None, force_recreate: bool = False) -> str:
    """A readable path holding ``content`` that never lands in a shared directory.

    Same signature as the kubernetes client's ``_create_temp_file_with_content``
    (``temp_file_path`` is ignored: the caller's directory choice is what leaks)."""
    data = content.encode() if isinstance(content, str) else bytes(content)
    key = hashlib.sha256(data).hexdigest()
    with _lock:
        if not force_recreate and key in _material:
            return _material[key]
        path = _memfd_path(data)
        if path is None:
            fd, path = tempfile.mkstemp(dir=private_runtime_dir())
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        _material[key] = path
        return path


class ExecPluginError(ConfigException):
    pass


def _plugin_name(args: list[str]) -> str:
    return os.path.basename(str(args[0])) if args else "?"


def _record_failure(message: str) -> None:
    global _exec_failure
    with _lock:
        _exec_failure = message


def take_exec_failure() -> str | None:
    """The last exec plugin failure since the previous call (then forgotten)."""
    global _exec_failure
    with _lock:
        message, _exec_failure = _exec_failure, None
    return message


def _terminal_is_ours() -> bool:
    """A plugin may talk to the user only where stdin and stdout are this process's terminal: not
    under the TUI, whose stand-in streams say "a tty" but have no descriptor (and a plugin reading
    the keyboard there would fight the app for it)."""
    try:
        return all(os.isatty(stream.fileno()) for stream in (sys.stdin, sys.stdout, sys.stderr))
    except (AttributeError, OSError, ValueError):  # no descriptor at all (a capture, a closed stream)
        return False


class BoundedExecProvider(k8s_exec_provider.ExecProvider):
    """The client's exec plugin runner with a deadline and failures in words."""

    def run(self, previous_response: dict[str, Any] | None = None) -> dict[str, Any]:
        name = _plugin_name(self.args)
        interactive = _terminal_is_ours()
        info: dict[str, Any] = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": {"interactive": interactive}}
        if previous_response:
            info["spec"]["response"] = previous_response
        if self.cluster:
            info["spec"]["cluster"] = self.cluster.value
            for extension in self.cluster.value.get("extensions") or ():
                if extension.get("name") == "client.authentication.k8s.io/exec":
                    info["spec"]["cluster"]["config"] = extension.get("extension")
                    break
        self.env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        try:
            process = subprocess.Popen(
                self.args, stdout=subprocess.PIPE, stderr=sys.stderr if interactive else subprocess.PIPE,
                stdin=sys.stdin if interactive else subprocess.DEVNULL, cwd=self.cwd, env=self.env,
                universal_newlines=True, shell=self.shell, start_new_session=not interactive)
        except OSError as err:
            return self._fail(f"exec plugin {name} could not start: {err.strerror or err}")
        try:
            stdout, stderr = process.communicate(timeout=_exec_timeout)
        except BaseException as err:  # a timeout, Ctrl-C, SIGTERM: never leave the plugin running
            process.kill()
            process.communicate()
            if not isinstance(err, subprocess.TimeoutExpired):
                raise
            return self._fail(f"exec plugin {name} did not finish within {_exec_timeout:g} s (timed out); "
                              "run it by hand to see what it waits for")
        if process.returncode != 0:
            detail = (stderr or "").strip()[-2000:]
            return self._fail(f"exec plugin {name} exited {process.returncode}" + (f": {detail}" if detail else ""))
        try:
            data = json.loads(stdout)
        except ValueError as err:
            return self._fail(f"exec plugin {name} printed no ExecCredential JSON: {err}")
        if not isinstance(data, dict) or not isinstance(data.get("status"), dict):
            return self._fail(f"exec plugin {name} printed an ExecCredential without status")
        if data.get("apiVersion") != self.api_version:
            return self._fail(f"exec plugin {name} answered apiVersion {data.get('apiVersion')}, not {self.api_version}")
        status: dict[str, Any] = data["status"]
        return status

    @staticmethod
    def _fail(message: str) -> NoReturn:
        _record_failure(message)
        raise ExecPluginError(message)


def harden_kubernetes_client(exec_timeout: float | None = None) -> None:
    """Install the two replacements in the kubernetes client (idempotent).
    ``exec_timeout``: seconds per plugin run, 0 for no limit, None to keep the current one."""
    global _installed, _exec_timeout
    if exec_timeout is not None:
        _exec_timeout = float(exec_timeout) or None
    if _installed:
        return
    k8s_kube_config._create_temp_file_with_content = private_material_path
    # Replacing the class the loader instantiates is the point; a plain assignment to a class
    # name is refused by the type checker, so the module attribute is set by name.
    setattr(k8s_kube_config, "ExecProvider", BoundedExecProvider)  # noqa: B010
    _installed = True


__all__ = [
    "BoundedExecProvider", "ExecPluginError", "harden_kubernetes_client", "install_exit_on_signals",
    "private_material_path", "private_runtime_dir", "remove_private_runtime_dir", "take_exec_failure",
]
