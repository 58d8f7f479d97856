"""Freshness of a home on an object store, written once for every engine (s3fs's
:class:`.s3.S3Source`, obstore's :class:`.obstore.ObstoreSource`).

A folder is revalidated with one conditional GET per name, all in flight together (an unchanged
file is a bodiless 304); a zip bundle with one conditional suffix-range GET of its tail
(:class:`.tail_archive.TailZipBundle`); another kind of bundle, or a home where the GETs found
nothing (an empty home, a bundle of another name, no home at all), is read again and compared
by content. The engine supplies the requests: :meth:`ObjectHome.remote` and
:meth:`ObjectHome.conditional_gets`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from toolnexus.sources.base import SourceBase
from toolnexus.sources.bundle import ZIP
from toolnexus.sources.freshness import Changes, NotModified, Validators
from toolnexus.sources.registry import kind_by_name
from toolnexus.sources.remote import RemoteObject
from toolnexus.sources.tail_archive import TailZipBundle

__all__ = ["ObjectHome"]

T = TypeVar("T")


class ObjectHome(SourceBase):
    """A source whose home is ``path`` on an object store, revalidated as the module says."""

    path: str

    def remote(self, path: str) -> RemoteObject:
        """The object ``path`` of this home's store, through the engine's client."""
        raise NotImplementedError

    async def conditional_gets(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | None:
        """Each name's first ``limit + 1`` bytes with ``If-None-Match`` where an ETag is known
        (:func:`.remote.conditional_gets`); ``None`` when no name is there."""
        raise NotImplementedError

    async def on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await one of the engine's coroutines from the caller's loop (by default, there)."""
        return await coroutine

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """Conditional GETs (see the module); where they find nothing, the usual read decides."""
        kind = kind_by_name(self.path)
        changes: Changes | NotModified | None = None
        if kind is None:
            changes = self.remote(self.path).run(self.conditional_gets, since, names, limit)
        elif kind is ZIP:
            changes = TailZipBundle(self.remote(self.path)).tail_changes(since, names, limit)
        return super().changed_since(since, names, limit) if changes is None else changes

    async def changed_since_async(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """A folder's GETs are awaited without a thread per persona (a bundle takes one)."""
        if kind_by_name(self.path) is not None:
            return await asyncio.to_thread(self.changed_since, since, names, limit)
        changes = await self.on_loop(self.conditional_gets(since, names, limit))
        if changes is not None:
            return changes
        return await asyncio.to_thread(super().changed_since, since, names, limit)
