"""The object-store plan over a ranged GET with validators (:class:`ObjectClient`, from s3fs or
obstore). A folder's freshness is one ``If-None-Match`` GET per name, all together. A zip is read
from its tail (no HEAD: ``Content-Range`` has the size), then its wanted members at once, pinned by
``If-Match`` to the tail's ETag, so a bundle replaced meanwhile is read again, never mixed."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import threading
import zipfile
from collections.abc import Callable, Coroutine, Hashable, Sequence
from concurrent.futures import Future
from typing import IO, Any, NamedTuple, TypeVar, cast

from toolnexus._aio import await_on_loop, run_on_loop
from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError, read_error
from toolnexus.sources.base import Match, Reading, SourceBase, by_content, fs_token
from toolnexus.sources.bundle import ZIP, BundleSource
from toolnexus.sources.freshness import NOT_MODIFIED, Changes, FreshFile, NotModified, Validators
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.registry import ArchiveKind, kind_by_name

T = TypeVar("T")

#: The first request's suffix range: a whole persona bundle, or any bundle's central directory.
TAIL_BYTES = 64 * 1024
#: Bytes fetched past a member's data: a local header's extra field may outgrow the central one's.
MEMBER_SLACK = 1024
#: How much a read outside the fetched pieces asks for at least.
MISS_BLOCK = 16 * 1024
#: Deflate expands by at most 5 bytes per 16 KiB block: what ``limit + 1`` inflated bytes can need.
_DEFLATE_OVERHEAD = 64 * 1024
#: How often a read starts over when the bundle keeps being replaced under it.
_ATTEMPTS = 3


class ObjectChangedError(OSError):
    """``If-Match`` failed: the object was replaced between two requests of one read."""


class Fetched(NamedTuple):
    """One GET's body, the object's ETag and its whole size (from ``Content-Range``)."""

    body: bytes
    etag: str | None
    size: int


class ObjectClient:
    """The object ``path`` of ``fs`` (s3fs, or :class:`.obstore.StoreFiles`), on ``fs.loop``."""

    def __init__(self, fs: Any, path: str) -> None:
        self.fs = fs
        self.path = path
        self.location = str(fs.unstrip_protocol(path))  #: the object's URL, for messages

    @property
    def token(self) -> Hashable:  # what tells two clients' servers apart, for cache keys
        return fs_token(self.fs)

    def run(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
        return run_on_loop(self.fs, function, *args, **kwargs)

    async def get(
        self,
        start: int,
        end: int | None = None,
        *,
        if_none_match: str | None = None,
        if_match: str | None = None,
    ) -> Fetched | NotModified:
        """Bytes ``[start, end)`` (the last ``-start`` when ``end`` is ``None``): ``NOT_MODIFIED``
        for a 304, :class:`ObjectChangedError` for a 412; an empty object is an empty body."""
        raise NotImplementedError

    async def tail(self, size: int, *, if_none_match: str | None = None) -> Fetched | NotModified:
        return await self.get(-size, if_none_match=if_none_match)

    async def piece(self, start: int, end: int, *, if_match: str | None) -> bytes:
        got = await self.get(start, end, if_match=if_match)
        if isinstance(got, NotModified):  # cannot happen without If-None-Match
            raise BootstrapError(f"{self.location}: unexpected 304")
        return got.body


class TailArchive(io.RawIOBase):
    """One version (ETag) of a remote archive, seekable: a read outside the pieces fetched so far
    fetches that piece, pinned by ``If-Match``."""

    def __init__(self, remote: ObjectClient, first: Fetched) -> None:
        super().__init__()
        self.remote = remote
        self.etag = first.etag
        self.size = first.size
        self._pieces: dict[int, bytes] = {first.size - len(first.body): first.body}
        self._position = 0

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

    def _piece_at(self, offset: int) -> tuple[int, bytes] | None:
        for start, data in self._pieces.items():
            if start <= offset < start + len(data):
                return start, data
        return None

    def _fetch(self, spans: Sequence[tuple[int, int]]) -> None:
        async def fetch_all() -> list[bytes]:
            pieces = (self.remote.piece(start, end, if_match=self.etag) for start, end in spans)
            return list(await asyncio.gather(*pieces))

        for (start, _), body in zip(spans, self.remote.run(fetch_all), strict=True):
            self._pieces[start] = body

    def prefetch_members(
        self, names: Sequence[str], folder: str | None, limit: int, wanted: Match | None = None
    ) -> None:
        """Fetch every member that may be one of ``names`` (or that ``wanted`` accepts by its
        path) in one concurrent batch; never assets."""
        with zipfile.ZipFile(self) as archive:
            members = archive.infolist()
            directory_start = archive.start_dir
        starts = sorted({member.header_offset for member in members} | {directory_start})
        spans: list[tuple[int, int]] = []
        for member in members:
            if member.is_dir():
                continue
            if not (_may_be_wanted(member.filename, names, folder) or (wanted and wanted(member.filename))):
                continue
            data = min(member.compress_size, limit + 1 + _DEFLATE_OVERHEAD)
            want = 30 + len(member.filename.encode()) + len(member.extra) + data + MEMBER_SLACK
            following = next((s for s in starts if s > member.header_offset), self.size)
            end = min(member.header_offset + want, following)
            piece = self._piece_at(member.header_offset)
            if piece is None or piece[0] + len(piece[1]) < end:  # not fetched with the tail
                spans.append((member.header_offset, end))
        if spans:
            self._fetch(_merge(spans))
        self.seek(0)


def _may_be_wanted(path: str, names: Sequence[str], folder: str | None) -> bool:
    """A member the home rule could pick: ``NAME`` or ``FOLDER/NAME`` (one level, or ``folder``)."""
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


#: The tail GETs in flight, by (client, object, validator): see :func:`_shared_tail`.
_TAILS: dict[Hashable, Future[Fetched | NotModified]] = {}
_TAILS_LOCK = threading.Lock()


def _shared_tail(remote: ObjectClient, if_none_match: str | None) -> Fetched | NotModified:
    """The tail GET; a caller asking the same while it is in flight (the soul and the skills of
    one bundle, read as a session starts) waits for its answer, so it may see the bundle up to one
    round trip older than its call. Nothing is kept once answered."""
    key = (remote.token, remote.path, if_none_match)
    with _TAILS_LOCK:
        flight = _TAILS.get(key)
        if flight is None:
            _TAILS[key] = Future()
    if flight is not None:
        return flight.result()
    try:
        tail = remote.run(remote.tail, TAIL_BYTES, if_none_match=if_none_match)
    except BaseException as error:
        _landed(key).set_exception(error)
        raise
    _landed(key).set_result(tail)
    return tail


def _landed(key: Hashable) -> Future[Fetched | NotModified]:
    with _TAILS_LOCK:  # gone before it is answered: a later caller sends its own GET
        return _TAILS.pop(key)


def _forked() -> None:
    _TAILS.clear()  # a forked child has none of the threads that were sending them
    _TAILS_LOCK.release()


os.register_at_fork(before=_TAILS_LOCK.acquire, after_in_parent=_TAILS_LOCK.release, after_in_child=_forked)


def open_tail_archive(
    remote: ObjectClient,
    names: Sequence[str],
    limit: int,
    *,
    folder: str | None = None,
    if_none_match: str | None = None,
    wanted: Match | None = None,
) -> TailArchive | NotModified:
    """The tail of the zip ``remote`` and the members that may be wanted (see the module);
    ``NOT_MODIFIED`` when its ETag is still ``if_none_match``."""
    for _ in range(_ATTEMPTS):
        tail = _shared_tail(remote, if_none_match)
        if isinstance(tail, NotModified):
            return NOT_MODIFIED
        archive = TailArchive(remote, tail)
        try:
            archive.prefetch_members(names, folder, limit, wanted)
        except ObjectChangedError:
            continue  # replaced between the tail and the members: read the new version whole
        except zipfile.BadZipFile:
            archive.seek(0)  # not a zip: the caller's zipfile says so, with the bundle's name
        return archive
    raise BootstrapError(f"{remote.location}: the bundle kept changing while it was read")


class TailZipBundle(BundleSource):
    """A zip bundle on an object store, read from its tail and revalidated by its ETag."""

    def __init__(self, remote: ObjectClient, folder: str | None = None) -> None:
        self.remote = remote
        opener = self._tail_opener(BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, folder)
        super().__init__(opener, remote.location, folder)

    def _tail_opener(
        self, names: Sequence[str], limit: int, folder: str | None, wanted: Match | None = None
    ) -> Callable[[], IO[bytes]]:
        return lambda: cast(
            IO[bytes], open_tail_archive(self.remote, names, limit, folder=folder, wanted=wanted)
        )

    @property
    def cache_key(self) -> Hashable:
        return ("tail-bundle", self.location, self.folder, self.remote.token)

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """Prefetch only ``names`` (a profile's members), not all seven."""
        bundle = BundleSource(self._tail_opener(names, limit, self.folder), self.location, self.folder)
        return bundle.read_entries(names, limit, exact_sizes=exact_sizes)

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        """The folder's files that ``match`` accepts (each skill's SKILL.md) fetched with the
        tail in one batch, not one by one as ``zipfile`` comes to them."""

        def wanted(path: str) -> bool:
            inside = f"/{path}".partition(f"/{folder}/")[2] if folder else path
            return bool(inside) and (match is None or match(inside))

        opener = self._tail_opener((), limit, self.folder, wanted)
        return BundleSource(opener, self.location, self.folder).read_folder(folder, limit, match=match)

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        changes = self.tail_changes(since, names, limit)
        return super().changed_since(since, names, limit) if changes is None else changes

    def tail_changes(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified | None:
        """One conditional tail GET: a 304 keeps everything, else the new bundle is read from
        what it brought. ``None``: no such object."""
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


class ObjectHome(FsspecSource):
    """A home on an object store, read by :class:`FsspecSource`'s plan, revalidated by :meth:`remote`."""

    def remote(self, path: str) -> ObjectClient:
        raise NotImplementedError

    def open_bundle(self, kind: ArchiveKind, folder: str | None = None, info: Any = None) -> SourceBase:
        """A zip is read from its tail (no HEAD); other kinds as on any filesystem."""
        if kind is ZIP:
            return TailZipBundle(self.remote(self.path), folder)
        return super().open_bundle(kind, folder, info)

    def read_named_bundle(
        self, kind: ArchiveKind, names: Sequence[str], limit: int, exact_sizes: bool
    ) -> Reading | None:
        if kind is not ZIP:
            return super().read_named_bundle(kind, names, limit, exact_sizes)
        try:
            return self.open_bundle(kind).read_entries(names, limit, exact_sizes=exact_sizes)
        except FileNotFoundError:
            return None  # no such object: a folder named *.zip, or no home (the reads tell)

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        """A zip's name: read from its tail, no HEAD (as :meth:`read_named_bundle`)."""
        if kind_by_name(self.path) is ZIP:
            with contextlib.suppress(FileNotFoundError):  # a folder named *.zip, or no home
                return self.open_bundle(ZIP).read_folder(folder, limit, match=match)
        return super().read_folder(folder, limit, match=match)

    async def conditional_gets(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | None:
        """Every name's capped GET together, ``If-None-Match`` where an ETag is known; ``None`` when
        no name is there (the usual read tells)."""
        previous = {} if since is None else since.validators

        async def revalidated(name: str) -> Fetched | NotModified | Exception | None:
            etag = previous.get(name)
            try:
                client = self.remote(self.path_of(name))
                return await client.get(0, limit + 1, if_none_match=etag if isinstance(etag, str) else None)
            except FileNotFoundError:
                return None
            except Exception as error:
                return error

        kept: list[str] = []
        read: dict[str, FreshFile] = {}
        for name, got in zip(names, await asyncio.gather(*map(revalidated, names)), strict=True):
            if isinstance(got, Exception):
                raise read_error(got, self.location, name) from got
            if isinstance(got, NotModified):
                kept.append(name)
            elif got is not None:
                read[name] = FreshFile(got.body, got.size, got.etag)
        return Changes(self.location, None, tuple(kept), read) if kept or read else None

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """Conditional GETs; where they find nothing, the usual read decides by content."""
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
        """A folder's GETs are awaited on the client's loop (a bundle takes a thread)."""
        if kind_by_name(self.path) is not None:
            return await asyncio.to_thread(self.changed_since, since, names, limit)
        changes = await await_on_loop(self.fs, self.conditional_gets(since, names, limit))
        if changes is not None:
            return changes
        return await asyncio.to_thread(super().changed_since, since, names, limit)
