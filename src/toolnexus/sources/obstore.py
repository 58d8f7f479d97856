"""The obstore engine: persona homes read, written and revalidated through obstore's own client
(Rust ``object_store``), with the request plan of the s3fs path and a fraction of its CPU.

``ObstoreSource(store, "personas/aster")`` is a home on an obstore store object (``S3Store``,
``GCSStore``, ``AzureStore``; ``MemoryStore`` for tests); ``engine="obstore"`` builds one from an
``s3://``, ``gs://`` or ``az://`` URL (:mod:`.obstore_options`).

- **Reading** a folder: one ranged GET per bootstrap name (``bytes=0-2097152``), all in flight
  together: one round trip, no LIST, no HEAD. Only when every name is missing is the home looked
  up: one LIST (an empty home), then one HEAD (a bundle, or no home at all). A zip bundle is read
  from its tail (:mod:`.tail_archive`: one suffix-range GET for a small bundle; Azure, which has no
  suffix ranges, a HEAD and a GET); other bundle kinds through a 1 MiB readahead.
- **Writing** is :class:`~toolnexus.stores.ObstoreStore`: obstore's conditional put, behind the
  probe like every store.
- **Freshness**: one GET per name with ``If-None-Match: <etag>`` (an unchanged file is a bodiless
  304); a zip bundle one conditional tail GET.

Every obstore error is mapped once, by :func:`toolnexus._object_store.object_store_error`.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Coroutine, Hashable, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

from toolnexus._aio import run_sync
from toolnexus._fs import is_empty_range_error
from toolnexus._object_store import is_conflict, object_store_error
from toolnexus.errors import BootstrapError, location_error, read_error
from toolnexus.sources.base import Entry, Reading, SourceBase, by_content
from toolnexus.sources.bundle import ZIP
from toolnexus.sources.freshness import (
    NOT_MODIFIED,
    Changes,
    NotModified,
    Validators,
    conditional_changes,
)
from toolnexus.sources.fsspec import all_failed_alike
from toolnexus.sources.registry import (
    HEAD_BYTES,
    STREAM_BLOCK_SIZE,
    ArchiveFile,
    ArchiveKind,
    kind_by_name,
    not_a_bundle,
    not_a_folder,
    sniff_kind,
)
from toolnexus.sources.remote import Fetched, ObjectChangedError, revalidated
from toolnexus.sources.tail_archive import TailZipBundle
from toolnexus.stores import MemoryStore, ObstoreStore, require_enforced
from toolnexus.stores.obstore import store_token, store_url

__all__ = ["ObstoreRemote", "ObstoreSource"]

T = TypeVar("T")

if TYPE_CHECKING:
    from obstore import GetOptions


class ObstoreSource(SourceBase):
    """A persona home on an obstore store: ``ObstoreSource(S3Store("bucket"), "personas/aster")``.

    ``prefix`` is the home's path inside the store (relative to the store's own prefix, if it
    has one); ``""`` is the store's root. Pass it wherever a location goes.
    """

    def __init__(self, store: Any, prefix: str = "") -> None:
        self.store = store
        self.path = prefix.strip("/")
        self.location = store_url(store, self.path)

    @property
    def cache_key(self) -> Hashable:
        return ("obstore", self.location, store_token(self.store))

    def path_of(self, name: str) -> str:
        return f"{self.path}/{name}" if self.path else name

    # -- reading --------------------------------------------------------------------------------

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """One concurrent batch of capped ranged GETs; a home lookup only when nothing was there."""
        kind = kind_by_name(self.path)
        if kind is not None:
            reading = self._read_named_bundle(kind, names, limit, exact_sizes)
            if reading is not None:
                return reading
        found = self._entries(names, run_sync(self._fetch, names, limit, exact_sizes))
        return found if found is not None else self._nothing_found(names, limit, exact_sizes)

    async def read_entries_async(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Reading:
        """The GETs are awaited on the caller's loop: no thread per persona."""
        if kind_by_name(self.path) is not None:
            return await asyncio.to_thread(self.read_entries, names, limit, exact_sizes=exact_sizes)
        found = self._entries(names, await self._fetch(names, limit, exact_sizes))
        if found is not None:
            return found
        return await asyncio.to_thread(self._nothing_found, names, limit, exact_sizes)

    async def _fetch(self, names: Sequence[str], limit: int, exact_sizes: bool) -> list[Any]:
        return list(await asyncio.gather(*(self._capped(self.path_of(n), limit, exact_sizes) for n in names)))

    async def _capped(self, key: str, limit: int, exact_sizes: bool) -> Entry | BaseException | None:
        """The first ``limit + 1`` bytes of ``key``; ``None`` if absent; a failure as a value."""
        import obstore  # noqa: PLC0415  (the optional engine)

        try:
            if exact_sizes:  # the GET's own metadata has the size of a file over the cap
                result = await obstore.get_async(self.store, key, options={"range": (0, limit + 1)})
                return Entry(bytes(await result.bytes_async()), result.meta["size"])
            data = bytes(await obstore.get_range_async(self.store, key, start=0, end=limit + 1))
        except Exception as error:
            if is_empty_range_error(error):
                return Entry(b"", 0)  # a range from 0 cannot be satisfied: the object is empty
            mapped = object_store_error(error)
            return None if isinstance(mapped, FileNotFoundError) else mapped
        return Entry(data, len(data) if len(data) <= limit else None)

    def _entries(self, names: Sequence[str], results: list[Any]) -> Reading | None:
        alike = all_failed_alike(results)
        if alike is not None:
            raise read_error(alike, self.location, None) from alike
        entries: dict[str, Entry] = {}
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                raise read_error(result, self.location, name) from result
            if result is not None:
                entries[name] = result
        return Reading(self.location, entries) if entries else None

    def _nothing_found(self, names: Sequence[str], limit: int, exact_sizes: bool) -> Reading:
        """No name was there: an empty home (one LIST), a bundle (one HEAD), or no home at all."""
        if self._holds_objects():
            return Reading(self.location, {})
        size = self._head_size(self.path)
        if size is None:
            raise location_error(FileNotFoundError, self.location, "no such persona home")
        return self._bundle(size).read_entries(names, limit, exact_sizes=exact_sizes)

    def _read_named_bundle(
        self, kind: ArchiveKind, names: Sequence[str], limit: int, exact_sizes: bool
    ) -> Reading | None:
        """A home named ``*.zip`` is read from its tail first; another kind is looked up (one
        HEAD). ``None``: no such object (a folder so named, or nothing: the usual reads tell)."""
        try:
            if kind is ZIP:
                return self.open_bundle(kind).read_entries(names, limit, exact_sizes=exact_sizes)
            size = self._head_size(self.path)
            if size is None:
                return None
            return self.open_bundle(kind, None, size).read_entries(names, limit, exact_sizes=exact_sizes)
        except FileNotFoundError:
            return None

    # -- bundles --------------------------------------------------------------------------------

    def open_bundle(
        self, kind: ArchiveKind, folder: str | None = None, size: int | None = None
    ) -> SourceBase:
        """This path as a bundle of ``kind``: a zip from its tail, any other kind streamed."""
        if kind is ZIP:
            return TailZipBundle(ObstoreRemote(self.store, self.path), folder)
        info = None if size is None else {"size": size}
        return kind.open(ArchiveFile(self.path, self.location, StoreFiles(self.store), info), folder)

    def _bundle(self, size: int) -> SourceBase:
        kind = kind_by_name(self.path) or sniff_kind(
            StoreFiles(self.store).cat_file(self.path, 0, HEAD_BYTES)
        )
        if kind is None:
            raise not_a_bundle(self.location)
        return self.open_bundle(kind, None, size)

    def _holds_objects(self) -> bool:
        """One LIST of the home's prefix: does anything live under it?"""
        import obstore  # noqa: PLC0415

        try:
            listing = obstore.list_with_delimiter(self.store, self.path or None)
        except Exception as error:
            raise read_error(object_store_error(error), self.location, None) from error
        return bool(listing["objects"] or listing["common_prefixes"])

    def _head_size(self, key: str) -> int | None:
        """The size of the object ``key`` (one HEAD), or ``None`` if there is none."""
        import obstore  # noqa: PLC0415

        if not key:
            return None
        try:
            return int(obstore.head(self.store, key)["size"])
        except Exception as error:
            mapped = object_store_error(error)
            if isinstance(mapped, FileNotFoundError):
                return None
            raise read_error(mapped, self.location, None) from error

    # -- writing --------------------------------------------------------------------------------

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """obstore's conditional puts, once the probe has seen the server refuse a stale one;
        ``single_writer=True`` skips the probe (the owner's word: one process writes). The home
        must be a folder that exists: one HEAD (a bundle is read-only) and one LIST."""
        if self._head_size(self.path) is not None:
            raise not_a_folder(ArchiveFile(self.path, self.location, StoreFiles(self.store)))
        if not self._holds_objects():
            raise location_error(FileNotFoundError, self.location, "no such persona home")
        return ObstoreStore(self, name, probe=_trust if single_writer else require_enforced)

    # -- freshness ------------------------------------------------------------------------------

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """Conditional GETs (see the module); where they find nothing, the usual read decides."""
        kind = kind_by_name(self.path)
        if kind is ZIP:
            changes = TailZipBundle(ObstoreRemote(self.store, self.path)).tail_changes(since, names, limit)
        elif kind is None:
            changes = run_sync(self._conditional_gets, since, names, limit)
        else:
            changes = None
        return by_content(self.read_entries(names, limit), since) if changes is None else changes

    async def changed_since_async(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        if kind_by_name(self.path) is not None:
            return await asyncio.to_thread(self.changed_since, since, names, limit)
        changes = await self._conditional_gets(since, names, limit)
        if changes is not None:
            return changes
        return by_content(await asyncio.to_thread(self.read_entries, names, limit), since)

    async def _conditional_gets(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | None:
        previous = {} if since is None else since.validators

        def fetch(name: str) -> Coroutine[Any, Any, Fetched | NotModified]:
            etag = previous.get(name)
            tag = etag if isinstance(etag, str) else None
            return ObstoreRemote(self.store, self.path_of(name)).get((0, limit + 1), if_none_match=tag)

        answers = await asyncio.gather(*(revalidated(fetch(name)) for name in names))
        return conditional_changes(self.location, names, answers)


def _trust(store: Any) -> None:
    """The probe of a ``single_writer=True`` home: none."""


class ObstoreRemote:
    """One object through obstore, as :mod:`.tail_archive` fetches it (and as freshness does)."""

    def __init__(self, store: Any, key: str) -> None:
        self.store = store
        self.key = key
        self.location = store_url(store, key)

    @property
    def token(self) -> Hashable:
        return store_token(self.store)

    def run(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        return run_sync(function, *args)

    async def get(
        self, byte_range: Any, *, if_none_match: str | None = None, if_match: str | None = None
    ) -> Fetched | NotModified:
        """One GET of ``byte_range`` (obstore's spelling) under the conditions; an empty object
        (whose range cannot be satisfied) is fetched whole. Errors come out mapped."""
        import obstore  # noqa: PLC0415

        options: GetOptions = {"range": byte_range}
        if if_none_match is not None:
            options["if_none_match"] = if_none_match
        if if_match is not None:
            options["if_match"] = if_match
        try:
            try:
                result = await obstore.get_async(self.store, self.key, options=options)
            except Exception as error:
                if not (is_empty_range_error(error) or _ignored_range(error)):
                    raise
                del options["range"]  # an empty object: nothing to range over
                result = await obstore.get_async(self.store, self.key, options=options)
            body = bytes(await result.bytes_async())
        except Exception as error:
            if _not_modified(error):
                return NOT_MODIFIED
            if is_conflict(error):
                raise ObjectChangedError(f"{self.location} changed while it was being read") from error
            raise object_store_error(error) from error
        return Fetched(body, result.meta["e_tag"], int(result.meta["size"]))

    async def tail(self, size: int, *, if_none_match: str | None = None) -> Fetched | NotModified:
        if type(self.store).__name__ != "AzureStore":
            return await self.get({"suffix": size}, if_none_match=if_none_match)
        return await self._tail_without_suffix(size, if_none_match)

    async def _tail_without_suffix(self, size: int, if_none_match: str | None) -> Fetched | NotModified:
        """Azure Blob answers no suffix range: a HEAD for the size and ETag, then a GET pinned
        to that ETag (a bundle replaced in between fails it, and the read starts over)."""
        import obstore  # noqa: PLC0415

        try:
            head = await obstore.head_async(self.store, self.key)
        except Exception as error:
            raise object_store_error(error) from error
        if if_none_match is not None and head["e_tag"] == if_none_match:
            return NOT_MODIFIED
        total = int(head["size"])
        if total == 0:
            return Fetched(b"", head["e_tag"], 0)
        body = await self.piece(max(0, total - size), total, if_match=head["e_tag"])
        return Fetched(body, head["e_tag"], total)

    async def piece(self, start: int, end: int, *, if_match: str | None) -> bytes:
        got = await self.get((start, end), if_match=if_match)
        if isinstance(got, NotModified):  # cannot happen without If-None-Match
            raise BootstrapError(f"{self.location}: unexpected 304")
        return got.body


def _not_modified(error: BaseException) -> bool:
    import obstore.exceptions  # noqa: PLC0415

    return isinstance(error, obstore.exceptions.NotModifiedError)


def _ignored_range(error: BaseException) -> bool:
    """A server that answered a ranged GET with the whole object (200): moto does for a suffix
    range of an empty object; obstore then refuses the response."""
    return "non-partial response" in str(error)


class StoreFiles:
    """The few file operations :class:`ArchiveFile` uses (a bundle's leading bytes, a stream for
    tar) and ``write_bundle`` uses (``exists``, ``pipe_file``), over an obstore store: how this
    engine reads bundles other than zip, and writes bundles."""

    protocol = "obstore"

    def __init__(self, store: Any) -> None:
        self.store = store

    def unstrip_protocol(self, path: str) -> str:
        return store_url(self.store, path)

    def invalidate_cache(self, path: str | None = None) -> None:
        """obstore caches nothing: nothing to drop."""

    def exists(self, path: str) -> bool:
        import obstore  # noqa: PLC0415

        try:
            obstore.head(self.store, path)
        except Exception as error:
            mapped = object_store_error(error)
            if isinstance(mapped, FileNotFoundError):
                return False
            raise mapped from error
        return True

    def pipe_file(self, path: str, data: bytes) -> None:
        """One PUT (atomic on object stores)."""
        import obstore  # noqa: PLC0415

        try:
            obstore.put(self.store, path, data, use_multipart=False)
        except Exception as error:
            raise object_store_error(error) from error

    def cat_file(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        import obstore  # noqa: PLC0415

        try:
            if end is None:
                return bytes(obstore.get(self.store, path).bytes())
            return bytes(obstore.get_range(self.store, path, start=start, end=end))
        except Exception as error:
            if is_empty_range_error(error):
                return b""
            raise object_store_error(error) from error

    def open(self, path: str, mode: str = "rb", **options: Any) -> IO[bytes]:
        """A sequential reader with a readahead of ``block_size`` (1 MiB by default)."""
        import obstore  # noqa: PLC0415

        try:
            reader = obstore.open_reader(
                self.store, path, buffer_size=options.get("block_size") or STREAM_BLOCK_SIZE
            )
        except Exception as error:
            raise object_store_error(error) from error
        return io.BufferedReader(_Reader(reader))


class _Reader(io.RawIOBase):
    """obstore's ``ReadableFile`` as a raw binary stream (its reads return ``Bytes``)."""

    def __init__(self, reader: Any) -> None:
        super().__init__()
        self._reader = reader

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._reader.read(len(buffer))
        except Exception as error:
            raise object_store_error(error) from error
        view = memoryview(data)
        buffer[: len(view)] = view
        return len(view)

    def close(self) -> None:
        self._reader.close()
        super().close()
