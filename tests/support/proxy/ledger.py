"""The request log, counters and fault rules of :class:`S3Proxy`."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

from tests.support.proxy.actions import FaultAction, FaultRule, Hold, Matcher, _make_matcher
from tests.support.proxy.records import ProxyRequest, RequestRecord
from tests.support.proxy.wire import _Connection


class _Ledger:
    """Observation, fault and bookkeeping methods of :class:`S3Proxy`.

    The attributes below are initialised by ``S3Proxy.__init__``; ``_lock``
    guards all of them, and is notified whenever one changes (see :meth:`wait_until`).
    """

    _lock: threading.Condition
    _records: list[RequestRecord]
    _bytes_sent: int
    _faults: list[FaultRule]
    _in_flight: int
    _peak_in_flight: int
    _connections: dict[int, _Connection]

    # -- observation -------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log.

        Records are appended when the response starts going out (or the fault
        is applied), so a client that has seen a response finds it logged.
        """
        with self._lock:
            return list(self._records)

    def count(self, method: str | None = None) -> int:
        """Number of logged requests, optionally only those with ``method``."""
        with self._lock:
            if method is None:
                return len(self._records)
            wanted = method.upper()
            return sum(1 for r in self._records if r.method == wanted)

    @property
    def bytes_sent(self) -> int:
        """Total response *body* bytes written to clients."""
        with self._lock:
            return self._bytes_sent

    @property
    def peak_in_flight(self) -> int:
        """Highest number of requests being handled at the same time."""
        with self._lock:
            return self._peak_in_flight

    @property
    def in_flight(self) -> int:
        """Requests being handled right now (read, not yet answered)."""
        with self._lock:
            return self._in_flight

    @property
    def open_connections(self) -> int:
        """Client connections currently open."""
        with self._lock:
            return len(self._connections)

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 60.0) -> None:
        """Block until ``predicate()`` holds: the way a test waits for a request to arrive, a
        stall to start or connections to close, instead of sleeping and hoping.

        ``predicate`` is re-checked whenever the log, the counters, the connections or a fault's
        hits change; it may read the proxy (the lock is reentrant). ``timeout`` only bounds a
        hang: it raises ``TimeoutError``, which no correct run on a loaded machine reaches.
        """
        with self._lock:
            if not self._lock.wait_for(predicate, timeout):
                raise TimeoutError(f"S3Proxy: condition not reached within {timeout} s: {self!r}")

    @contextlib.contextmanager
    def gathering(self, n: int, timeout: float = 30.0) -> Iterator[None]:
        """Hold every request until ``n`` are in flight at once, then let them (and later ones) go.

        Shows that requests are issued together without hoping they overlap within some latency,
        which a loaded machine can defeat. If ``n`` never gather (a client that sends them one by
        one), all are let go after ``timeout`` and :attr:`peak_in_flight` tells the test so.
        """
        release = threading.Event()
        rule = self.add_fault(None, Hold(release, timeout=timeout + 30))

        def release_when_gathered() -> None:
            with contextlib.suppress(TimeoutError):
                self.wait_until(lambda: self.in_flight >= n or release.is_set(), timeout)
            release.set()

        releaser = threading.Thread(target=release_when_gathered, name="S3Proxy-gathering", daemon=True)
        releaser.start()
        try:
            yield
        finally:
            release.set()
            with self._lock:
                self._lock.notify_all()
            releaser.join()
            self.remove_fault(rule)

    def reset(self) -> None:
        """Clear the request log and the byte/concurrency counters (not faults)."""
        with self._lock:
            self._records.clear()
            self._bytes_sent = 0
            self._peak_in_flight = self._in_flight
            self._lock.notify_all()

    # -- faults ------------------------------------------------------------

    def add_fault(
        self,
        match: Matcher | str | None,
        action: FaultAction,
        *,
        times: int | None = None,
    ) -> FaultRule:
        """Register a fault.

        ``match`` is a callable ``(ProxyRequest) -> bool``, a substring of the
        request path (raw or percent-decoded) or ``None`` (every request).
        ``times=None`` applies the fault to every matching request, an int to
        the first ``times`` matching requests only.  Rules are tried in the
        order they were added; the first one that matches (and is not
        exhausted) wins.
        """
        if not isinstance(action, FaultAction):
            raise TypeError(f"not a fault action: {action!r}")
        if times is not None and times < 0:
            raise ValueError("times must be >= 0 or None")
        rule = FaultRule(_make_matcher(match), action, times)
        with self._lock:
            self._faults.append(rule)
        return rule

    def remove_fault(self, rule: FaultRule) -> None:
        with self._lock:
            self._faults = [r for r in self._faults if r is not rule]

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _pick_fault(self, request: ProxyRequest) -> FaultAction | None:
        with self._lock:
            rules = list(self._faults)
        for rule in rules:
            if rule._try_claim(request):
                with self._lock:
                    self._lock.notify_all()  # a rule's hits changed
                return rule.action
        return None

    # -- bookkeeping -------------------------------------------------------

    def _log(self, record: RequestRecord) -> int:
        with self._lock:
            self._records.append(record)
            self._bytes_sent += record.response_body_bytes
            self._lock.notify_all()
            return len(self._records) - 1

    def _correct(self, index: int, record: RequestRecord, sent: int) -> None:
        """Fix up a record logged optimistically before sending."""
        with self._lock:
            delta = sent - record.response_body_bytes
            if index < len(self._records) and self._records[index] is record:
                self._records[index] = replace(record, response_body_bytes=sent)
                self._bytes_sent += delta
                self._lock.notify_all()
