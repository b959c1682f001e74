"""Raw JSON requests through an authenticated kubernetes ApiClient.

For paths the generated API classes do not cover well (any kind by apiVersion/kind, the Kueue
visibility API) and for query options they omit (`dryRun`, `fieldValidation`). Non-2xx answers
raise `ApiException`, exactly like the generated classes.
"""

from __future__ import annotations

import json
from typing import Any

DEFAULT_TIMEOUT_SECONDS = 30


def request_json(
    api_client: Any,
    method: str,
    path: str,
    body: Any = None,
    query: list[tuple[str, str]] | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    from kubernetes.client.exceptions import ApiException

    method_, url, headers, body_, post = api_client.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or [],
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(method_, url, header_params=headers, body=body_, post_params=post, _request_timeout=timeout)
    data = response.read() if hasattr(response, "read") else response.data
    if not 200 <= response.status <= 299:
        raise ApiException(http_resp=response, body=data.decode("utf-8", "replace") if isinstance(data, bytes) else data)
    return json.loads(data or b"{}")
