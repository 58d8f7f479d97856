"""SoulCache: repeat compositions for long-running gateways, without giving up freshness.

Every call revalidates: the cache only skips work that provably did not change, so a changed,
added or removed file is seen on the very next call, exactly as without a cache. What counts as
proof is each source's own answer (:meth:`~toolnexus.sources.SourceBase.changed_since`: a
local stat, an S3 ETag, a bundle's stat or ETag, else a content hash); the cache holds no
per-backend code. Two relaxations exist and are **off** by default: ``max_age`` and
``stale_if_error``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from toolnexus.composer.budget import Budget
from toolnexus.composer.fitting import fitted_soul
from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.soul.arguments import Call
from toolnexus.soul.snapshot import Snapshot, advance
from toolnexus.sources import (
    DEFAULT_ENGINE,
    BootstrapSource,
    cache_key,
    changed_since,
    changed_since_async,
)

__all__ = ["CacheStats", "SoulCache"]

logger = logging.getLogger("toolnexus.agents")

#: Default bound: personas kept. A persona holds its decoded sections (about its files' size
#: in characters): ~20 KiB for a typical persona, at most 7 times 2 MiB for one at the cap.
DEFAULT_MAX_PERSONAS = 256


@dataclass
class CacheStats:
    """What the cache did, call by call: for dashboards and for tests."""

    #: Calls answered from the cache without any I/O (only with ``max_age``).
    fresh_hits: int = 0
    #: Calls that revalidated and found at least one file unchanged.
    revalidated: int = 0
    #: Calls whose persona was not cached (first call, or evicted).
    misses: int = 0
    #: Calls that served a stale soul because the store failed (only with ``stale_if_error``).
    stale_served: int = 0
    #: Personas dropped to stay within ``max_personas``.
    evictions: int = 0


@dataclass
class _Held:
    snapshot: Snapshot
    #: ``clock()`` when the snapshot was last confirmed by the store.
    confirmed: float
    budget: Budget | None = None
    #: The snapshot fitted to ``budget``, worked out once.
    fitted: tuple[str, list[str]] | None = None

    def serve(self) -> tuple[str, list[str]]:
        if self.budget is None:
            return self.snapshot.soul, list(self.snapshot.found)
        if self.fitted is None:
            sections, location = self.snapshot.sections, self.snapshot.location
            header = len("## \n\n")  # a section is "## NAME\n\nBODY"
            bodies = [(name, sections[name][len(name) + header :]) for name in self.snapshot.found]
            self.fitted = fitted_soul(location, bodies, self.budget)
        return self.fitted[0], list(self.fitted[1])


@dataclass(frozen=True)
class _Pending:
    """A call that has to ask the store: the source, its cache key, and what the cache held."""

    source: BootstrapSource
    key: Hashable
    held: _Held | None
    names: tuple[str, ...]
    budget: Budget | None

    @property
    def old(self) -> Snapshot | None:
        return None if self.held is None else self.held.snapshot


class SoulCache:
    """An opt-in cache for :func:`compose_soul` that revalidates on every call.

    ``cache = SoulCache()`` then ``cache.compose_soul(home)`` (or ``compose_soul(home,
    cache=cache)``) returns exactly what :func:`compose_soul` would, but an unchanged local file
    is not read or decoded again and an unchanged S3 file costs a bodiless 304.

    * ``max_personas`` bounds memory: least recently used personas are dropped beyond it.
    * ``max_age`` (seconds, default ``None`` = off): serve a soul confirmed less than this long
      ago **without any request** — edits then take up to ``max_age`` to show.
    * ``stale_if_error`` (seconds, default ``None`` = off): when the store fails (an ``OSError``
      other than "no such home/file"), serve the last good soul if it was confirmed at most this
      long ago, and log a warning naming the error. A persona that is gone is never served.

    Safe to share between threads and event loops; the lock is never held during I/O.
    """

    def __init__(
        self,
        max_personas: int = DEFAULT_MAX_PERSONAS,
        *,
        max_age: float | None = None,
        stale_if_error: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_personas < 1:
            raise ValueError("max_personas must be at least 1")
        self.max_personas = max_personas
        self.max_age = max_age
        self.stale_if_error = stale_if_error
        self.stats = CacheStats()
        self._clock = clock
        self._held: OrderedDict[Hashable, _Held] = OrderedDict()
        #: Locations already resolved (sources hold no state that can go stale: each call reads).
        self._sources: dict[Hashable, tuple[BootstrapSource, Hashable]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        """Forget every persona."""
        with self._lock:
            self._held.clear()
            self._sources.clear()

    def compose_soul(
        self,
        dir: str | os.PathLike[str] | Any,
        *,
        storage_options: Mapping[str, Any] | None = None,
        fs: Any = None,
        follow_external_symlinks: bool = False,
        budget: Budget | None = None,
        files: Iterable[str] | None = None,
        profile: str | None = None,
        engine: str = DEFAULT_ENGINE,
    ) -> tuple[str, list[str]]:
        """:func:`compose_soul`, revalidating what this cache holds for ``dir`` (per profile and
        budget: each combination is its own entry; files outside a profile are never read)."""
        where = (storage_options, fs, follow_external_symlinks, engine)
        call = self._begin(dir, Call.checked(where, (budget, files, profile)))
        if not isinstance(call, _Pending):
            return call
        try:
            snapshot = advance(
                call.old, changed_since(call.source, call.old, call.names, MAX_BOOTSTRAP_FILE_BYTES)
            )
        except OSError as error:
            return self._failed(call, error)
        return self._after(call, snapshot)

    async def compose_soul_async(
        self,
        dir: str | os.PathLike[str] | Any,
        *,
        storage_options: Mapping[str, Any] | None = None,
        fs: Any = None,
        follow_external_symlinks: bool = False,
        budget: Budget | None = None,
        files: Iterable[str] | None = None,
        profile: str | None = None,
        engine: str = DEFAULT_ENGINE,
    ) -> tuple[str, list[str]]:
        """:meth:`compose_soul` for event loops: each source decides how it waits (S3 on s3fs's
        own loop, the obstore engine on the caller's, the others in a worker thread)."""
        where = (storage_options, fs, follow_external_symlinks, engine)
        call = self._begin(dir, Call.checked(where, (budget, files, profile)))
        if not isinstance(call, _Pending):
            return call
        try:
            answer = await changed_since_async(call.source, call.old, call.names, MAX_BOOTSTRAP_FILE_BYTES)
            snapshot = advance(call.old, answer)
        except OSError as error:
            return self._failed(call, error)
        return self._after(call, snapshot)

    def _begin(self, dir: Any, call: Call) -> tuple[str, list[str]] | _Pending:
        """The soul itself when ``max_age`` lets it be served without a request, else what to ask."""
        names, budget = call.names, call.budget
        source, key = self._resolve(dir, call)
        if budget is not None or names != BOOTSTRAP_ORDER:  # each narrowing is an entry of its own
            key = (key, names, budget)
        held = self._before(key)
        if held is not None and self._fresh(held):
            return held.serve()
        return _Pending(source, key, held, names, budget)

    def _resolve(self, dir: Any, call: Call) -> tuple[BootstrapSource, Hashable]:
        """The source and its cache key; an absolute path or URL given alone is resolved once."""
        memo: Hashable | None = None
        if call.storage_options is None and call.fs is None and isinstance(dir, str | PurePath):
            text = os.fspath(dir)
            if text.startswith("/") or "://" in text:  # a relative path follows the working folder
                memo = (text, call.follow_external_symlinks, call.engine)
                known = self._sources.get(memo)
                if known is not None:
                    return known
        source = call.source(dir)
        resolved = (source, cache_key(source))
        if memo is not None:
            if len(self._sources) >= 2 * self.max_personas:
                self._sources.clear()
            self._sources[memo] = resolved
        return resolved

    def _before(self, key: Hashable) -> _Held | None:
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                self._held.move_to_end(key)
            return held

    def _fresh(self, held: _Held) -> bool:
        if self.max_age is None or self._clock() - held.confirmed >= self.max_age:
            return False
        self.stats.fresh_hits += 1
        return True

    def _after(self, call: _Pending, snapshot: Snapshot) -> tuple[str, list[str]]:
        key, old = call.key, call.old
        now = self._clock()
        if old is snapshot:  # unchanged: the hot path
            held = self._held.get(key)
            if held is not None and held.snapshot is snapshot:
                held.confirmed = now
                self.stats.revalidated += 1
                return held.serve()
        confirmed = _Held(snapshot, now, call.budget)
        with self._lock:
            if old is None:
                self.stats.misses += 1
            else:
                self.stats.revalidated += 1
            self._held[key] = confirmed
            self._held.move_to_end(key)
            while len(self._held) > self.max_personas:
                self._held.popitem(last=False)
                self.stats.evictions += 1
        return confirmed.serve()

    def _failed(self, call: _Pending, error: OSError) -> tuple[str, list[str]]:
        """Serve the last good soul if ``stale_if_error`` allows it, loudly; otherwise raise."""
        key, held = call.key, call.held
        if isinstance(error, FileNotFoundError | NotADirectoryError):
            with self._lock:
                self._held.pop(key, None)  # the persona is gone: never serve it again
            raise error
        if held is None or self.stale_if_error is None:
            raise error
        age = self._clock() - held.confirmed
        if age > self.stale_if_error:
            raise error
        logger.warning(
            "%s: serving the soul confirmed %.1f s ago (stale_if_error=%s s): the store failed: %s",
            held.snapshot.location,
            age,
            self.stale_if_error,
            error,
        )
        self.stats.stale_served += 1
        return held.serve()
