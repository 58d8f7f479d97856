"""What the proxy logs per request, and what fault ``match`` callables see."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProxyRequest:
    """A fully read client request, as seen by fault ``match`` callables.

    ``path`` and ``query`` are the raw (still percent-encoded) parts of the
    request target; ``headers`` has lower-case keys (repeated headers joined
    with ``", "``).
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    range_header: str | None
    body: bytes = field(repr=False)
    connection_id: int


@dataclass(frozen=True)
class RequestRecord:
    """One request handled by the proxy.

    ``response_status`` is ``None`` when no response was sent (:class:`Reset`,
    :class:`Stall`, or the client went away first).  ``response_body_bytes``
    counts response *body* bytes actually written to the client socket.
    ``fault`` is the ``repr`` of the injected fault action, if any.
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    range_header: str | None
    response_status: int | None
    response_body_bytes: int
    request_body_bytes: int = 0
    fault: str | None = None
    connection_id: int = 0

    @property
    def byte_span(self) -> tuple[int, int]:
        """``(first, last)`` of a ``Range: bytes=FIRST-LAST`` header (both inclusive)."""
        first, _, last = (self.range_header or "").removeprefix("bytes=").partition("-")
        return int(first), int(last)
