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
from collections.abc import Coroutine, Hashable, Sequence
from typing import Any

from toolnexus._aio import run_sync
from toolnexus._fs import is_empty_range_error, is_hidden
from toolnexus._object_store import object_store_error
from toolnexus.errors import location_error, read_error
from toolnexus.sources.base import Entry, Reading, SourceBase
from toolnexus.sources.bundle import ZIP
from toolnexus.sources.children import Pages, delimited_children, no_such_prefix
from toolnexus.sources.freshness import Changes, NotModified, Validators
from toolnexus.sources.fsspec import all_failed_alike
from toolnexus.sources.object_home import ObjectHome
from toolnexus.sources.obstore_client import ObstoreRemote, StoreFiles
from toolnexus.sources.registry import (
    HEAD_BYTES,
    ArchiveFile,
    ArchiveKind,
    kind_by_name,
    not_a_bundle,
    not_a_folder,
    sniff_kind,
)
from toolnexus.sources.remote import Fetched, conditional_gets
from toolnexus.sources.tail_archive import TailZipBundle
from toolnexus.stores import MemoryStore, ObstoreStore, require_conditional_delete, require_enforced
from toolnexus.stores.obstore import SingleWriterObstoreStore, store_token, store_url

__all__ = ["ObstoreRemote", "ObstoreSource", "StoreFiles"]


class ObstoreSource(ObjectHome):
    """A persona home on an obstore store: ``ObstoreSource(S3Store("bucket"), "personas/aster")``.

    ``prefix`` is the home's path inside the store (relative to the store's own prefix, if it
    has one); ``""`` is the store's root. Pass it wherever a location goes (``audit`` too: then
    it is the prefix whose children are listed).
    """

    def __init__(self, store: Any, prefix: str = "") -> None:
        self.store = store
        self.path = prefix.strip("/")
        self.location = store_url(store, self.path)
        self.fs = StoreFiles(store)  #: its filesystem: ``resolve(key, fs=source.fs)`` is a home on it

    @classmethod
    def on_files(cls, files: StoreFiles, prefix: str = "") -> ObstoreSource:
        """The home ``prefix`` on ``files``' store, keeping how ``files`` are rebuilt elsewhere."""
        source = cls(files.store, prefix)
        source.fs = files
        return source

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

    # -- folders (topic files) ------------------------------------------------------------------

    def files(self, folder: str) -> dict[str, int]:
        """Every object below ``folder`` (one recursive listing): ``{path relative to it: size}``,
        hidden names left out; a folder with nothing in it is empty."""
        import obstore  # noqa: PLC0415

        prefix = self.path_of(folder).rstrip("/") + "/"
        found: dict[str, int] = {}
        for chunk in obstore.list(self.store, prefix=prefix.rstrip("/"), chunk_size=1000):
            for meta in chunk:
                relative = str(meta["path"]).removeprefix(prefix)
                if relative != meta["path"] and not is_hidden(relative):
                    found[relative] = int(meta["size"])
        return found

    def read_folder(self, folder: str, limit: int) -> Reading:
        """One listing of the folder, then one batch of capped GETs (a bundle reads its own)."""
        size = self._head_size(self.path)
        if size is not None:
            return self._bundle(size).read_folder(folder, limit)
        try:
            names = [f"{folder}/{path}" for path in sorted(self.files(folder))]
        except Exception as error:
            raise read_error(object_store_error(error), self.location, folder) from error
        results = run_sync(self._fetch, names, limit, False) if names else []
        entries: dict[str, Entry] = {}
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                raise read_error(result, self.location, name) from result
            if result is not None:  # None: removed since the listing
                entries[name] = result
        return Reading(self.location, entries)

    def children(self) -> Pages | None:
        """The prefix's children (:func:`.children.delimited_children`); ``None`` for a bundle."""
        pages = delimited_children(self.store, self.path, self.location)
        if pages is not None:
            return pages
        if self._head_size(self.path) is None:
            raise no_such_prefix(self.location)
        return None

    # -- bundles --------------------------------------------------------------------------------

    def open_bundle(
        self, kind: ArchiveKind, folder: str | None = None, size: int | None = None
    ) -> SourceBase:
        """This path as a bundle of ``kind``: a zip from its tail, any other kind streamed."""
        if kind is ZIP:
            return TailZipBundle(ObstoreRemote(self.store, self.path), folder)
        info = None if size is None else {"size": size}
        return kind.open(ArchiveFile(self.path, self.location, self.fs, info), folder)

    def _bundle(self, size: int) -> SourceBase:
        kind = kind_by_name(self.path) or sniff_kind(self.fs.cat_file(self.path, 0, HEAD_BYTES))
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
        ``single_writer=True`` skips the probe (the owner's word: one process writes). Renaming a
        topic file needs a delete conditional on a version, which obstore does not offer: refused
        (:func:`~toolnexus.stores.require_conditional_delete` says why) unless ``single_writer``.
        The home must be a folder that exists: one HEAD (a bundle is read-only) and one LIST."""
        if self._head_size(self.path) is not None:
            raise not_a_folder(ArchiveFile(self.path, self.location, self.fs))
        if not self._holds_objects():
            raise location_error(FileNotFoundError, self.location, "no such persona home")
        if single_writer:
            return SingleWriterObstoreStore(self, name, probe=_trust)
        return ObstoreStore(self, name, probe=require_enforced, delete_probe=require_conditional_delete)

    # -- freshness (the plan is :class:`.object_home.ObjectHome`'s) ------------------------------

    def remote(self, path: str) -> ObstoreRemote:
        return ObstoreRemote(self.store, path)

    async def conditional_gets(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | None:
        def fetch(name: str, etag: str | None) -> Coroutine[Any, Any, Fetched | NotModified]:
            return ObstoreRemote(self.store, self.path_of(name)).get((0, limit + 1), if_none_match=etag)

        return await conditional_gets(self.location, since, names, fetch)


def _trust(store: Any) -> None:
    """The probe of a ``single_writer=True`` home: none."""
