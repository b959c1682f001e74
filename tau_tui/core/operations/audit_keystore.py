"""Where the per-user signing key and the audit log's head are kept: the trust store.

The OS keyring through ``keyring`` (a plain-file backend is not usable without its own opt-in,
:mod:`tau_tui.core.operations.keyring_policy`).  When no usable keyring backend exists, 0600 files
in a 0700 directory under the state directory are used only when the user chose them with
``TAU_TUI_ALLOW_FILE_KEY_STORE=1`` (said on stderr, with the reason, when the key is created
there); otherwise every read and write refuses, naming why and the opt-in, so the trust anchor
never moves to files that anyone running as the user can plant without the user saying so.  A
file store says so (:attr:`KeyStore.anchor_warning`): `audit verify` and `evidence verify` then
exit 4, not 0.

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
from tau_tui.core.operations.private_dirs import private_directory

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

SERVICE = "tau-tui"
#: Set to 1 (true, yes, on) to keep the signing key and heads in 0600 files when no OS keyring is usable.
ALLOW_FILE_STORE_ENV = "TAU_TUI_ALLOW_FILE_KEY_STORE"
_YES = frozenset({"1", "true", "yes", "on"})
_VALUE_LIMIT = 64 * 1024
_said_fallback = False


class KeyStoreError(OSError):
    """The key store could not be read or written; the message says which and why."""


class KeyStore(Protocol):
    #: Where the values live, in words (for messages; never a value).
    where: str
    #: Why a check against this store proves less than the OS keyring would ("" for the keyring).
    anchor_warning: str

    def get(self, name: str) -> str | None: ...

    def put(self, name: str, value: str) -> None: ...


class KeyringStore:
    """Slots of the ``tau-tui`` service in the OS keyring."""

    def __init__(self, module: Any, backend: object) -> None:
        self._keyring = module
        self.where = f"the OS keyring ({type(backend).__name__})"
        self.anchor_warning = ""

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

    def __init__(self, directory: Path, why: str = "no usable OS keyring", anchor_warning: str | None = None,
                 announce: bool = True) -> None:
        self.directory = directory
        #: Say on stderr where a new key went (not for the demo's own key).
        self.announce = announce
        #: Why the OS keyring is not used (said when the key is created here).
        self.why = why
        self.where = f"{directory} (files 0600; {why})"
        self.anchor_warning = anchor_warning or (
            f"checked against key files in {directory} ({ALLOW_FILE_STORE_ENV}=1; {why}): anyone running as you "
            "can replace them, so this proves nothing against a process running as you")

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
        private_directory(self.directory)
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


class RefusedStore:
    """No usable OS keyring and no opt-in to files: every read and write refuses, saying why."""

    def __init__(self, directory: Path, why: str) -> None:
        self.directory = directory
        self.why = why
        self.where = f"no trust store ({why})"
        self.anchor_warning = self.where

    def _refuse(self) -> KeyStoreError:
        earlier = " (key files from an earlier run are there)" if any(
            p.name != ".lock" for p in (self.directory.iterdir() if self.directory.is_dir() else ())) else ""
        return KeyStoreError(
            f"{self.why}; the audit signing key and the audit head need a trust store: start or unlock the OS "
            f"keyring, or set {ALLOW_FILE_STORE_ENV}=1 to keep them in 0600 files in {self.directory}{earlier} "
            "(then `tau-tui audit verify` and `tau-tui evidence verify` exit 4: anyone running as you can "
            "replace those files)")

    def get(self, name: str) -> str | None:
        raise self._refuse()

    def put(self, name: str, value: str) -> None:
        raise self._refuse()


def file_store_allowed() -> bool:
    return os.environ.get(ALLOW_FILE_STORE_ENV, "").strip().lower() in _YES


def open_store(directory: Path) -> KeyStore:
    """The OS keyring when its backend may keep secrets (:mod:`tau_tui.core.operations.keyring_policy`);
    else 0600 files in ``directory`` when the user allowed them, else a store that refuses."""
    module, backend, refusal = chosen_keyring()
    if refusal is None:
        return KeyringStore(module, backend)
    if file_store_allowed():
        return FileStore(directory, refusal)
    return RefusedStore(directory, refusal)


def say_where_a_new_key_went(store: KeyStore) -> None:
    """Said once, when the key is created in the file fallback (stderr; never the key)."""
    global _said_fallback
    if isinstance(store, FileStore) and store.announce and not _said_fallback:
        _said_fallback = True
        print(f"tau-tui: {store.why}; as {ALLOW_FILE_STORE_ENV}=1 allows, the new signing key and the audit head "
              f"are kept in {store.directory} (files 0600, readable only by you; verify exits 4 against them)",
              file=sys.stderr)


@contextmanager
def store_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock across processes (a file in ``directory``) for read-modify-write of slots."""
    private_directory(directory)
    fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
