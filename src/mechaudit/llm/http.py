"""The HTTP client the SDKs use, given by a caller (tests build one on ``httpx.MockTransport``).

Both SDKs send through ``httpx2``; a plain ``httpx.Client`` is bridged. Imported only when a caller
passes a client, so an offline chapter never loads either HTTP library.
"""

from __future__ import annotations

import httpx
import httpx2


class _HttpxBridge(httpx2.BaseTransport):
    """Lets an ``httpx.Client`` (e.g. on ``httpx.MockTransport``) serve the SDK, which uses httpx2."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        sent = self._client.send(httpx.Request(request.method, str(request.url), headers=request.headers.raw,
                                               content=request.read()))
        # The body is already decoded: drop the headers that describe the wire encoding.
        headers = [(k, v) for k, v in sent.headers.raw
                   if k.lower() not in (b"content-encoding", b"transfer-encoding", b"content-length")]
        return httpx2.Response(sent.status_code, headers=headers, content=sent.read())


def as_httpx2(http_client: httpx.Client | httpx2.Client | None) -> httpx2.Client | None:
    """``http_client`` as the ``httpx2.Client`` the SDKs take (None stays None)."""
    if http_client is None or isinstance(http_client, httpx2.Client):
        return http_client
    if isinstance(http_client, httpx.Client):
        return httpx2.Client(transport=_HttpxBridge(http_client))
    raise TypeError(f"http_client must be an httpx.Client or httpx2.Client, got {type(http_client)}")
