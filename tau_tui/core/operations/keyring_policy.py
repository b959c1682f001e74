"""Which ``keyring`` backend may hold the app's secrets (rotation credentials, the signing key).

``keyring`` takes the highest-priority backend it finds; with ``keyrings.alt`` installed and no OS
keyring running, that is ``keyrings.alt.file.PlaintextKeyring``, which writes passwords (base64
only) to a plain file.  Such a backend is refused unless the user opts in with
``TAU_TUI_ALLOW_PLAINTEXT_KEYRING=1``; the fail and null backends are never usable.  A chain of
backends (``keyring.backends.chainer``) stores in its first member, so that member is judged.
"""

from __future__ import annotations

import os
from typing import Any

#: Set to 1 (true, yes, on) to let a backend that keeps secrets in plain files hold them.
ALLOW_PLAINTEXT_ENV = "TAU_TUI_ALLOW_PLAINTEXT_KEYRING"
_YES = frozenset({"1", "true", "yes", "on"})


def backend_name(backend: object) -> str:
    kind = type(backend)
    return f"{kind.__module__}.{kind.__qualname__}"


def storing_backend(backend: object) -> object:
    """The backend that writes: a chainer's first member, else ``backend`` itself."""
    from keyring.backends.chainer import ChainerBackend

    if isinstance(backend, ChainerBackend):
        members = list(backend.backends)
        return members[0] if members else backend
    return backend


def stores_in_plain_files(backend: object) -> bool:
    """Whether ``backend`` keeps secrets readable in a plain file (``keyrings.alt``'s
    ``PlaintextKeyring`` of ``file`` and ``pyfs``, or any class named for it)."""
    return any("plaintext" in kind.__name__.lower() for kind in type(backend).__mro__)


def plaintext_allowed() -> bool:
    return os.environ.get(ALLOW_PLAINTEXT_ENV, "").strip().lower() in _YES


def keyring_refusal(backend: object) -> str | None:
    """Why ``backend`` may not hold secrets, in words with what to do; None when it may."""
    from keyring.backends import fail

    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return f"no usable OS keyring backend (keyring reports {type(backend).__name__})"
    store = storing_backend(backend)
    if stores_in_plain_files(store) and not plaintext_allowed():
        return (f"the keyring backend {backend_name(store)} keeps secrets in a plain file, so it is not used; "
                f"set {ALLOW_PLAINTEXT_ENV}=1 to accept it")
    return None


def chosen_keyring() -> tuple[Any, object, str | None]:
    """The ``keyring`` module (None when not installed), its backend, and why that backend
    is refused (None when it may hold secrets)."""
    try:
        import keyring
    except ImportError:
        return None, None, "no usable OS keyring backend (the keyring package is not installed)"
    try:
        backend = keyring.get_keyring()
    except Exception as err:  # a broken keyring configuration is no keyring
        return keyring, None, f"no usable OS keyring backend (keyring failed: {type(err).__name__})"
    return keyring, backend, keyring_refusal(backend)
