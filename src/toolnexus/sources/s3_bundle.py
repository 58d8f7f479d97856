"""Zip bundles on S3 through s3fs, read from their tail (the plan is :mod:`.tail_archive`'s).

:class:`S3Remote` is the one object the plan needs: a suffix-range GET and pinned ranged GETs,
through ``fs._call_s3("get_object", …)`` (:mod:`.s3_requests`), which sees ``Content-Range``,
``ETag`` and the conditions that s3fs's file API hides.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Hashable, Sequence
from typing import IO, Any, TypeVar

from toolnexus._aio import run_on_loop
from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError
from toolnexus.sources.base import fs_token
from toolnexus.sources.s3_requests import NotModified, S3Object, get_object
from toolnexus.sources.tail_archive import MEMBER_SLACK, MISS_BLOCK, TAIL_BYTES
from toolnexus.sources.tail_archive import tail_opener as _tail_opener

__all__ = ["MEMBER_SLACK", "MISS_BLOCK", "TAIL_BYTES", "S3Remote", "tail_opener"]

T = TypeVar("T")


class S3Remote:
    """An object on S3, fetched by ranges on s3fs's own loop."""

    def __init__(self, fs: Any, path: str) -> None:
        self.fs = fs
        self.path = path
        self.location = str(fs.unstrip_protocol(path))

    @property
    def token(self) -> Hashable:
        return fs_token(self.fs)

    def run(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        return run_on_loop(self.fs, function, *args)

    async def tail(self, size: int, *, if_none_match: str | None = None) -> S3Object | NotModified:
        return await get_object(self.fs, self.path, f"bytes=-{size}", if_none_match=if_none_match)

    async def piece(self, start: int, end: int, *, if_match: str | None) -> bytes:
        got = await get_object(self.fs, self.path, f"bytes={start}-{end - 1}", if_match=if_match)
        if isinstance(got, NotModified):  # cannot happen without If-None-Match
            raise BootstrapError(f"{self.location}: unexpected 304")
        return got.body


def tail_opener(
    fs: Any,
    path: str,
    folder: str | None,
    names: Sequence[str] = BOOTSTRAP_ORDER,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
) -> Callable[[], IO[bytes]]:
    """An archive opener for :class:`BundleSource`: each call reads the bundle afresh from its
    tail, prefetching only the members that may be ``names``."""
    return _tail_opener(S3Remote(fs, path), folder, names, limit)
