"""Where the per-user signing key and the audit log's head are kept: the OS keyring through
``keyring``; only when no usable keyring backend exists (a plain-file backend is not usable
without the opt-in, :mod:`tau_tui.core.operations.keyring_policy`), 0600 files in a 0700 directory
under the state directory (said on stderr, with the reason, when the key is created there).

Values are short strings (a base64 key, a small JSON document).  Writers of the same slot from
several processes take :func:`store_lock`, an exclusive ``flock`` beside the fallback files.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from tau_tui.core.operations.keyring_policy import chosen_keyring

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

SERVICE = "tau-tui"
_VALUE_LIMIT = 64 * 1024
_said_fallback = False


class KeyStoreError(OSError):
    """The key store could not be read or written; the message says which and why."""


class KeyStore(Protocol):
    #: Where the values live, in words (for messages; never a value).
    where: str

    def get(self, name: str) -> str | None: ...

    def put(self, name: str, value: str) -> None: ...


class KeyringStore:
    """Slots of the ``tau-tui`` service in the OS keyring."""

    def __init__(self, module: Any, backend: object) -> None:
        self._keyring = module
        self.where = f"the OS keyring ({type(backend).__name__})"

    def get(self, name: str) -> str | None:
        try:
            value = self._keyring.get_password(SERVICE, name)
        except Exception as err:  # keyring raises backend-specific errors (D-Bus, locked collection)
            raise KeyStoreError(f"{self.where} could not be read ({type(err).__name__}: {err})") from None
        return value if isinstance(value, str) else None

    def put(self, name: str, value: str) -> None:
        try:
            self._keyring.set_password(SERVICE, name, value)
        except Exception as err:
            raise KeyStoreError(f"{self.where} could not be written ({type(err).__name__}: {err})") from None


class FileStore:
    """One 0600 file per slot in a 0700 directory, each replaced atomically."""

    def __init__(self, directory: Path, why: str = "no usable OS keyring") -> None:
        self.directory = directory
        #: Why the OS keyring is not used (said when the key is created here).
        self.why = why
        self.where = f"{directory} (files 0600; {why})"

    def _file(self, name: str) -> Path:
        readable = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:48]
        return self.directory / f"{readable}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:16]}"

    def get(self, name: str) -> str | None:
        path = self._file(name)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as err:
            raise KeyStoreError(f"{path}: cannot read the key store ({err.strerror or err})") from None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(_VALUE_LIMIT + 1)
        if len(data) > _VALUE_LIMIT:
            raise KeyStoreError(f"{path}: over {_VALUE_LIMIT} bytes; not a key store file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise KeyStoreError(f"{path}: not UTF-8; not a key store file") from None

    def put(self, name: str, value: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._file(name)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(value.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, path)
        except OSError as err:
            partial.unlink(missing_ok=True)
            raise KeyStoreError(f"{path}: cannot write the key store ({err.strerror or err})") from None


def open_store(directory: Path) -> KeyStore:
    """The OS keyring when its backend may keep secrets (:mod:`tau_tui.core.operations.keyring_policy`),
    else 0600 files in ``directory``."""
    module, backend, refusal = chosen_keyring()
    if refusal is None:
        return KeyringStore(module, backend)
    return FileStore(directory, refusal)


def say_where_a_new_key_went(store: KeyStore) -> None:
    """Said once, when the key is created in the file fallback (stderr; never the key)."""
    global _said_fallback
    if isinstance(store, FileStore) and not _said_fallback:
        _said_fallback = True
        print(f"tau-tui: {store.why}; the new signing key and the audit head are kept in "
              f"{store.directory} (files 0600, readable only by you)", file=sys.stderr)


@contextmanager
def store_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock across processes (a file in ``directory``) for read-modify-write of slots."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
