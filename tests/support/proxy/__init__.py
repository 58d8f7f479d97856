"""A loopback HTTP/1.1 proxy for putting between s3fs (aiobotocore) and moto.

It exists to *observe* and *perturb* the traffic of the code under test:

* count requests and response bytes (:attr:`S3Proxy.requests`,
  :meth:`S3Proxy.count`, :attr:`S3Proxy.bytes_sent`);
* inject latency (:attr:`S3Proxy.latency`, applied to every request, with
  concurrent requests sleeping concurrently);
* inject faults (:meth:`S3Proxy.add_fault` with :class:`Status`,
  :class:`Reset`, :class:`TruncateBody`, :class:`Stall`, :class:`Delay`,
  :class:`Hold` or :class:`LoseResponse`);
* let tests wait on what happens (:meth:`S3Proxy.wait_until`) instead of
  sleeping.

The proxy is a reverse proxy: point the client's ``endpoint_url`` at
:attr:`S3Proxy.endpoint_url`.  Requests are forwarded unchanged (same method,
request target and headers, including ``Host``, so SigV4 signatures stay
valid) except for hop-by-hop headers and ``Expect`` (the proxy answers
``100-continue`` itself); chunked request bodies are de-chunked and forwarded
with a ``Content-Length``.  Responses are fully buffered and re-framed with
``Content-Length`` (HEAD responses keep the upstream one and have no body).
If the upstream cannot be reached the client gets a 502 with S3-style XML.

Each client connection is served by its own (daemon) thread, so any number of
keep-alive connections and concurrent requests are supported.  An upstream
connection to the target is kept per client connection (moto closes it after
every response anyway).

Layout: :mod:`.records` (what is logged and what fault matchers see),
:mod:`.actions` (fault actions and rules), :mod:`.wire` (HTTP/1.1 parsing
and framing), :mod:`.ledger` (log, counters and faults of the proxy),
:mod:`.handler` (serving one request) and :mod:`.server` (:class:`S3Proxy`:
lifecycle and connections).
"""

from tests.support.proxy.actions import (
    Delay,
    FaultAction,
    FaultRule,
    Hold,
    LoseResponse,
    Reset,
    Stall,
    Status,
    TruncateBody,
    s3_error_body,
)

# Not in __all__, but importable from here as before the split.
from tests.support.proxy.actions import Matcher as Matcher
from tests.support.proxy.records import ProxyRequest, RequestRecord
from tests.support.proxy.server import LISTEN_BACKLOG as LISTEN_BACKLOG  # ditto
from tests.support.proxy.server import S3Proxy

__all__ = [
    "Delay",
    "FaultAction",
    "FaultRule",
    "Hold",
    "LoseResponse",
    "ProxyRequest",
    "RequestRecord",
    "Reset",
    "S3Proxy",
    "Stall",
    "Status",
    "TruncateBody",
    "s3_error_body",
]
