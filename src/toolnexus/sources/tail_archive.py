"""Zip bundles on object stores read from their tail: one request for a small bundle, two round
trips for any. The requests go through a :class:`RemoteObject` — S3 through s3fs
(:mod:`.s3_bundle`), or any store through obstore (:mod:`.obstore`) — so every engine follows
the same plan.

The first request is a suffix-range GET (``Range: bytes=-65536``): no HEAD, because its
``Content-Range`` carries the object's size, and its body the end record and the central
directory — and, for a persona bundle of a few KiB, every member too. (A store that cannot
answer a suffix range, Azure Blob, makes it a HEAD and a ranged GET pinned to the HEAD's ETag.)
For a larger bundle the central directory (parsed from that tail) says where the wanted members
are; all of them are then fetched **concurrently**, each range ending where the next member
starts, so an asset stored beside the persona's files is never fetched. Every later request
carries ``If-Match`` with the ETag of the first: a bundle replaced between two requests fails
them (412) and the read starts over from the tail, so one composition never mixes two versions.

The result is a seekable file object over the fetched pieces, for :mod:`zipfile` (through
:class:`BundleSource`, which applies the home rule, the cap and the zip-bomb bounds as for any
bundle). A read outside the fetched pieces — a central directory over 64 KiB, a local header
with a larger extra field than the central one — fetches that piece too, still pinned by
``If-Match``.
"""

from __future__ import annotations

import asyncio
import io
import zipfile
from collections.abc import Callable, Hashable, Sequence
from typing import IO, Any, TypeVar, cast

from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError, read_error
from toolnexus.sources.base import Reading, by_content
from toolnexus.sources.bundle import BundleSource
from toolnexus.sources.freshness import NOT_MODIFIED, Changes, NotModified, Validators
from toolnexus.sources.remote import Fetched, ObjectChangedError, RemoteObject

__all__ = [
    "MEMBER_SLACK",
    "MISS_BLOCK",
    "TAIL_BYTES",
    "Fetched",
    "ObjectChangedError",
    "RemoteObject",
    "TailArchive",
    "TailZipBundle",
    "open_tail_archive",
    "tail_opener",
]

T = TypeVar("T")

#: The suffix range of the first request: a whole typical persona bundle, or any bundle's end
#: record plus a central directory of several hundred members.
TAIL_BYTES = 64 * 1024

#: Bytes fetched past a member's data as the central directory describes it: a local header's
#: extra field may be longer than the central one's (timestamps, zip64), never by much.
MEMBER_SLACK = 1024

#: How much a read outside the fetched pieces asks for at least.
MISS_BLOCK = 16 * 1024

#: Deflate never expands by more than 5 bytes per 16 KiB block (stored blocks): the compressed
#: bytes ``limit + 1`` inflated bytes can need, however incompressible the text.
_DEFLATE_OVERHEAD = 64 * 1024

#: How often a read starts over when the bundle keeps being replaced under it.
_ATTEMPTS = 3


class TailArchive(io.RawIOBase):
    """One version (one ETag) of a remote archive: the pieces fetched so far, seekable.

    Reads inside the pieces cost nothing; a read outside fetches the piece with ``If-Match``.
    """

    def __init__(self, remote: RemoteObject, first: Fetched) -> None:
        super().__init__()
        self.remote = remote
        self.etag = first.etag
        self.size = first.size
        self._pieces: dict[int, bytes] = {first.size - len(first.body): first.body}
        self._position = 0
        #: Requests this archive made after the first (the tail): misses and prefetches.
        self.requests = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(22, f"seek before the start of {self.remote.location}")
        self._position = base + offset
        return self._position

    def read(self, size: int | None = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self._position + size)
        out = bytearray()
        while self._position < end:
            piece = self._piece_at(self._position)
            if piece is None:
                self._fetch([(self._position, min(self.size, max(end, self._position + MISS_BLOCK)))])
                continue
            start, data = piece
            chunk = data[self._position - start : end - start]
            out += chunk
            self._position += len(chunk)
        return bytes(out)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def covered(self, start: int, end: int) -> bool:
        """Whether bytes ``[start, end)`` were fetched already (as one piece)."""
        piece = self._piece_at(start)
        return piece is not None and piece[0] + len(piece[1]) >= end

    def _piece_at(self, offset: int) -> tuple[int, bytes] | None:
        for start, data in self._pieces.items():
            if start <= offset < start + len(data):
                return start, data
        return None

    def _fetch(self, spans: Sequence[tuple[int, int]]) -> None:
        """Fetch ``[start, end)`` spans of this version, concurrently; 412 if it was replaced."""
        bodies = self.remote.run(self._fetch_all, spans)
        for (start, _), body in zip(spans, bodies, strict=True):
            self._pieces[start] = body
        self.requests += len(spans)

    async def _fetch_all(self, spans: Sequence[tuple[int, int]]) -> list[bytes]:
        pieces = (self.remote.piece(start, end, if_match=self.etag) for start, end in spans)
        return list(await asyncio.gather(*pieces))

    def prefetch_members(self, names: Sequence[str], folder: str | None, limit: int) -> None:
        """Fetch every member that may be one of ``names`` in one concurrent batch; never assets."""
        with zipfile.ZipFile(self) as archive:
            members = archive.infolist()
            directory_start = archive.start_dir
        starts = sorted({member.header_offset for member in members} | {directory_start})
        spans: list[tuple[int, int]] = []
        for member in members:
            if member.is_dir() or not _may_be_wanted(member.filename, names, folder):
                continue
            data = min(member.compress_size, limit + 1 + _DEFLATE_OVERHEAD)
            want = 30 + len(member.filename.encode()) + len(member.extra) + data + MEMBER_SLACK
            following = next((s for s in starts if s > member.header_offset), self.size)
            end = min(member.header_offset + want, following)
            if not self.covered(member.header_offset, end):
                spans.append((member.header_offset, end))
        if spans:
            self._fetch(_merge(spans))
        self.seek(0)


def _may_be_wanted(path: str, names: Sequence[str], folder: str | None) -> bool:
    """A member the home rule could pick: ``NAME`` or ``FOLDER/NAME`` (one level, or the given folder)."""
    head, _, base = path.rpartition("/")
    if base not in names:
        return False
    if folder is not None:
        return head == folder.strip("/")
    return "/" not in head and head != "__MACOSX"


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Touching spans become one request."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def open_tail_archive(
    remote: RemoteObject,
    names: Sequence[str],
    limit: int,
    *,
    folder: str | None = None,
    if_none_match: str | None = None,
) -> TailArchive | NotModified:
    """Fetch the tail of the zip ``remote`` and the members that may be wanted; see the module.

    With ``if_none_match`` (the ETag of a version already read) an unchanged bundle costs one
    bodiless 304 and returns :data:`NOT_MODIFIED`. Raises ``FileNotFoundError`` for no such object.
    """
    for _ in range(_ATTEMPTS):
        tail = remote.run(_tail, remote, if_none_match)
        if isinstance(tail, NotModified):
            return NOT_MODIFIED
        archive = TailArchive(remote, tail)
        try:
            archive.prefetch_members(names, folder, limit)
        except ObjectChangedError:
            continue  # replaced between the tail and the members: read the new version whole
        except zipfile.BadZipFile:
            archive.seek(0)  # not a zip: the caller's zipfile says so, with the bundle's name
        return archive
    raise BootstrapError(f"{remote.location}: the bundle kept changing while it was read")


async def _tail(remote: RemoteObject, if_none_match: str | None) -> Fetched | NotModified:
    return await remote.tail(TAIL_BYTES, if_none_match=if_none_match)


def tail_opener(
    remote: RemoteObject,
    folder: str | None,
    names: Sequence[str] = BOOTSTRAP_ORDER,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
) -> Callable[[], IO[bytes]]:
    """An archive opener for :class:`BundleSource`: each call reads the bundle afresh from its
    tail and prefetches the members that may be ``names`` (a profile's files: no others)."""

    def opener() -> IO[bytes]:
        return cast(IO[bytes], open_tail_archive(remote, names, limit, folder=folder))

    return opener


class TailZipBundle(BundleSource):
    """A zip bundle on an object store, read from its tail and revalidated by its ETag: a cache
    costs one conditional suffix-range GET (a bodiless 304 while the bundle is unchanged)."""

    def __init__(self, remote: RemoteObject, folder: str | None = None) -> None:
        super().__init__(tail_opener(remote, folder), remote.location, folder)
        self.remote = remote

    @property
    def cache_key(self) -> Hashable:
        return ("tail-bundle", self.location, self.folder, self.remote.token)

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """Read ``names`` from a tail fetched for them: a profile's members are prefetched, the
        other bootstrap members never requested (the opener's default would fetch all seven)."""
        bundle = BundleSource(tail_opener(self.remote, self.folder, names, limit), self.location, self.folder)
        return bundle.read_entries(names, limit, exact_sizes=exact_sizes)

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        changes = self.tail_changes(since, names, limit)
        return super().changed_since(since, names, limit) if changes is None else changes

    def tail_changes(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified | None:
        """One conditional suffix-range GET: a 304 keeps everything; otherwise the new bundle is
        read from what that GET (and the member fetches) brought. ``None``: no such object."""
        etag = since.tag if since is not None and isinstance(since.tag, str) else None
        try:
            archive = open_tail_archive(self.remote, names, limit, folder=self.folder, if_none_match=etag)
        except FileNotFoundError:
            return None
        except Exception as error:
            raise read_error(error, self.location, None) from error
        if isinstance(archive, NotModified):
            return NOT_MODIFIED
        bundle = BundleSource(lambda: cast(IO[bytes], archive), self.location, self.folder)
        return by_content(bundle.read_entries(names, limit), since, archive.etag)
