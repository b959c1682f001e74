"""A client's bearer credential kept current while the app runs.

The kubernetes client loads an exec plugin's token or a ``tokenFile`` once.  With an
``expirationTimestamp`` it counts the token as expired five minutes early, so a plugin
that issues 60 s tokens (kubelogin, a cloud CLI) would run before every request; a token
file rotated on disk is never read again; and a 401 is simply returned.
:class:`CredentialRefresher` takes over the client's refresh hook: it loads the credential
again once its expiry has come, or when the server refuses the token in use, at most once
per :data:`MIN_REFRESH_INTERVAL_S` however many threads ask.  A refused request is sent once
more with the new token (:func:`retry_once_refreshed`); when loading gives the same token
back, the 401 stands and the caller says "unauthorised: re-login".  Tokens are never logged."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client as k8s

log = logging.getLogger(__name__)

#: No two loads of one client's credential closer than this (a plugin is a process start).
MIN_REFRESH_INTERVAL_S = 5.0
#: A token this close to its ``expirationTimestamp`` is loaded again before it is used.
EXPIRY_MARGIN = timedelta(seconds=5)
BEARER = "BearerToken"  # the client's api_key name for the Authorization header

#: Loads the credential into the client's configuration; returns its expiry (None: none given).
Reload = Callable[[], "datetime | None"]


class CredentialRefresher:
    """Keeps the bearer token of one client configuration current (thread-safe)."""

    def __init__(self, configuration: k8s.Configuration, reload: Reload, expiry: datetime | None = None,
                 clock: Callable[[], float] = time.monotonic, now: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self.configuration = configuration
        self._reload = reload
        self._clock = clock
        self._now = now
        self._lock = threading.Lock()
        self._last_load: float | None = None
        self.expiry = expiry
        self.loads = 0  # times the credential was loaded again (tests, diagnostics)
        setattr(configuration, "refresh_api_key_hook", self._before_request)  # noqa: B010  (declared None-typed)

    def token_in_use(self) -> str | None:
        """The Authorization value requests carry now (read without running any hook)."""
        value = self.configuration.api_key.get(BEARER)
        return str(value) if value else None

    def _before_request(self, _configuration: Any) -> None:
        expiry = self.expiry
        if expiry is not None and self._now() >= expiry - EXPIRY_MARGIN:
            self.refresh()

    def refresh(self, refused: str | None = None) -> bool:
        """Load the credential again, unless another thread did since ``refused`` was sent or a load
        was less than :data:`MIN_REFRESH_INTERVAL_S` ago.  True when the token in use is no longer
        ``refused`` (a request refused with it is worth one more try)."""
        with self._lock:
            in_use = self.token_in_use()
            if refused is not None and in_use is not None and in_use != refused:
                return True
            now = self._clock()
            if self._last_load is not None and now - self._last_load < MIN_REFRESH_INTERVAL_S:
                return False
            self._last_load = now
            self.loads += 1
            try:
                self.expiry = self._reload()
            except Exception as err:  # a plugin that fails is reported by the 401 it leads to
                log.debug("reloading the credential failed: %s", type(err).__name__)
            # Loading puts the client's own hook back (the one that runs a 60 s plugin on every request).
            setattr(self.configuration, "refresh_api_key_hook", self._before_request)  # noqa: B010
            return refused is not None and self.token_in_use() != refused


def reload_from(loader: Any, configuration: k8s.Configuration) -> Reload:
    """How a kubeconfig loader (``KubeConfigLoader``) loads its user's credential into ``configuration``
    again: the exec plugin runs again, a ``tokenFile`` is read again."""

    def reload() -> datetime | None:
        loader.load_and_set(configuration)
        expiry: datetime | None = getattr(loader, "expiry", None)
        return expiry

    return reload


def retry_once_refreshed(api_client: k8s.ApiClient, refresher: CredentialRefresher) -> k8s.ApiClient:
    """Every request of ``api_client`` refused with 401 refreshes the credential and, when the token
    changed, is sent once more with it (watches, lists, writes and logs alike)."""
    rest = api_client.rest_client
    send: Callable[..., Any] = rest.request  # the client's method carries no annotations

    def request(method: str, url: str, headers: dict[str, str] | None = None, body: Any = None,
                post_params: Any = None, _request_timeout: Any = None) -> Any:
        response = send(method, url, headers=headers, body=body, post_params=post_params,
                        _request_timeout=_request_timeout)
        if response.status != 401 or not headers:
            return response
        name = next((key for key in headers if key.lower() == "authorization"), None)
        if name is None or not refresher.refresh(refused=headers[name]):
            return response
        try:
            response.read()  # the refused answer is small; drained, its connection goes back to the pool
        except Exception:
            pass
        again = dict(headers)
        again[name] = refresher.token_in_use() or headers[name]
        return send(method, url, headers=again, body=body, post_params=post_params, _request_timeout=_request_timeout)

    setattr(rest, "request", request)  # noqa: B010  (an instance attribute shadows the method, as bound_requests does)
    setattr(api_client, "tau_credentials", refresher)  # noqa: B010
    return api_client


__all__ = ["EXPIRY_MARGIN", "MIN_REFRESH_INTERVAL_S", "CredentialRefresher", "reload_from", "retry_once_refreshed"]
