"""One object on a remote store, as the request plans see it: what a GET brings back, the
protocol an engine implements for the zip-tail plan (:mod:`.tail_archive`), and a folder's
revalidation by conditional GETs in the vocabulary of :func:`.freshness.conditional_changes`.
Written once here for the s3fs path (:mod:`.s3_bundle`, :mod:`.s3`) and the obstore engine
(:mod:`.obstore`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from toolnexus.sources.freshness import Changes, FreshFile, NotModified, Validators, conditional_changes

__all__ = ["Fetched", "ObjectChangedError", "RemoteObject", "conditional_gets", "revalidated"]

T = TypeVar("T")


class ObjectChangedError(OSError):
    """``If-Match`` failed: the object was replaced between two requests of one read."""


@dataclass(frozen=True, slots=True)
class Fetched:
    """One GET's body and what its headers said about the whole object."""

    body: bytes
    etag: str | None
    #: Size of the whole object (from ``Content-Range``, or the length of an unranged body).
    size: int


class RemoteObject(Protocol):
    """One object on a remote store, fetched by ranges under conditions; an engine provides it."""

    @property
    def location(self) -> str:
        """The object's URL, for messages."""
        ...

    @property
    def token(self) -> Hashable:
        """What tells two clients' servers apart (endpoint, credentials), for cache keys."""
        ...

    def run(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Run one of the coroutine functions below from sync code (on the engine's loop)."""
        ...

    async def tail(self, size: int, *, if_none_match: str | None = None) -> Fetched | NotModified:
        """The last ``size`` bytes, the object's size and ETag (``NOT_MODIFIED``: the ETag is
        still ``if_none_match``). A missing object raises ``FileNotFoundError``."""
        ...

    async def piece(self, start: int, end: int, *, if_match: str | None) -> bytes:
        """Bytes ``[start, end)``; :class:`ObjectChangedError` if the ETag is no longer ``if_match``."""
        ...


async def revalidated(
    request: Awaitable[Fetched | NotModified],
) -> FreshFile | NotModified | BaseException | None:
    """One conditional GET (``If-None-Match``) as :func:`.freshness.conditional_changes` takes it:
    the 304, the new bytes, ``None`` for a missing object, a failure as a value (reported
    against its file)."""
    try:
        got = await request
    except FileNotFoundError:
        return None
    except Exception as error:
        return error
    if isinstance(got, NotModified):
        return got
    return FreshFile(got.body, got.size, got.etag)


async def conditional_gets(
    location: str,
    since: Validators | None,
    names: Sequence[str],
    get: Callable[[str, str | None], Awaitable[Fetched | NotModified]],
) -> Changes | None:
    """Every name's GET together, each with ``If-None-Match`` where an ETag is known:
    ``get(name, etag)`` is the engine's capped GET. ``None`` when no name is there."""
    previous = {} if since is None else since.validators

    def etag(name: str) -> str | None:
        tag = previous.get(name)
        return tag if isinstance(tag, str) else None

    answers = await asyncio.gather(*(revalidated(get(name, etag(name))) for name in names))
    return conditional_changes(location, names, answers)
