"""Any fsspec filesystem, and every object store's reading plan: one ``cat_ranges`` batch of capped
reads (no LIST, no HEAD); only when every name is missing, ``isdir`` then ``info`` look the home up."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar

from toolnexus._aio import await_on_loop, run_on_loop
from toolnexus._fs import fsspec_files, is_empty_range_error
from toolnexus.errors import BootstrapError, read_error
from toolnexus.sources.base import Entry, Match, Reading, SourceBase, fs_token, read_errors, read_only
from toolnexus.sources.children import Pages, fsspec_children
from toolnexus.sources.registry import (
    ArchiveFile,
    ArchiveKind,
    detect_kind,
    kind_by_name,
    not_a_bundle,
    not_a_folder,
    protocols,
)
from toolnexus.stores.base import CompareAndSwapStore, MemoryStore
from toolnexus.stores.fsspec import FsspecStore
from toolnexus.stores.probe import require_conditional_delete, require_enforced

#: fsspec protocols that cannot write; archive filesystems (zip, tar, …) are recognised by class too.
READ_ONLY_PROTOCOLS = frozenset({"http", "https", "zip", "tar", "libarchive", "github", "git", "reference"})


def _all_failed_alike(results: Sequence[Any]) -> Exception | None:
    """The failure of a batch whose reads all failed alike (no credentials): it is the home's."""
    answers = (FileNotFoundError, IsADirectoryError)
    failures = [r for r in results if isinstance(r, Exception) and not isinstance(r, answers)]
    failures = [r for r in failures if not is_empty_range_error(r)]
    if len(failures) == len(results) > 1 and len({(type(f), str(f)) for f in failures}) == 1:
        return failures[0]
    return None


def _awaitable(fs: Any) -> bool:
    """Whether ``fs``'s coroutines are async (``DirFileSystem`` claims so whatever it wraps)."""
    while True:
        if not getattr(fs, "async_impl", False):
            return False
        inner = getattr(fs, "fs", None)
        if inner is None or not hasattr(inner, "async_impl"):
            return True
        fs = inner


class FsspecSource(SourceBase):
    """A persona home on any fsspec filesystem: ``FsspecSource(fsspec.filesystem("sftp"), "/aster")``
    (``path`` in the filesystem's own form); a file is opened as a bundle."""

    #: The compare-and-swap store the server can enforce (probed first); ``None``: refused.
    conditional_store: Callable[..., CompareAndSwapStore] | None = None
    #: No other process can reach this filesystem (``memory://``): a lock in this process suffices.
    process_local: bool = False
    #: Said after the refusal to write without conditional writes: another way out, if any.
    refusal_hint: ClassVar[str] = ""
    #: Whether a forked process can still read through it (obstore's runtime threads cannot).
    fork_safe: ClassVar[bool] = True

    def __init__(
        self,
        fs: Any,
        path: str,
        *,
        conditional_store: Callable[..., CompareAndSwapStore] | None = None,
        process_local: bool = False,
    ) -> None:
        if conditional_store is not None:
            self.conditional_store = conditional_store
        if process_local:
            self.process_local = True
        self.fs = fs
        self.path = path
        self.location = str(fs.unstrip_protocol(path))

    @property
    def cache_key(self) -> Hashable:
        return (type(self).__name__, self.location, fs_token(self.fs))

    def path_of(self, name: str) -> str:
        base = self.path.rstrip("/")
        if base:
            return f"{base}/{name}"
        return f"/{name}" if self.path.startswith("/") else name

    def children(self) -> Pages | None:
        """The folder's children from one ``ls``; ``None`` when the home is a file."""
        return fsspec_children(self.fs, self.path, self.location)

    def open_bundle(self, kind: ArchiveKind, folder: str | None = None, info: Any = None) -> SourceBase:
        """This path as a bundle of ``kind``; ``info``, a fresh ``fs.info``, spares a second HEAD."""
        return kind.open(ArchiveFile(self.path, self.location, self.fs, info), folder)

    def _bundle(self, info: dict[str, Any]) -> SourceBase:
        kind = detect_kind(ArchiveFile(self.path, self.location, self.fs, info))
        if kind is None:
            raise not_a_bundle(self.location)
        return self.open_bundle(kind, None, info)

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """The backend's compare-and-swap store, a lock in this process (``memory://``, or
        ``single_writer=True``: the owner's word), or a refusal; the home must be a folder."""
        if _is_read_only(self.fs):
            raise read_only(self.location, f"on a read-only {type(self.fs).__name__}", "it has no write side")
        self._require_folder()
        if single_writer or self.process_local:
            return FsspecStore(self, name)
        if self.conditional_store is not None:
            return self.conditional_store(
                self, name, probe=require_enforced, delete_probe=require_conditional_delete
            )
        raise BootstrapError(
            f"cannot write {name} in {self.location} safely: {type(self.fs).__name__} offers no "
            "conditional write, so writers in other processes could silently overwrite each other's "
            "edits. If only one process ever writes this home, pass single_writer=True "
            f"(CLI: --single-writer).{self.refusal_hint}"
        )

    def _require_folder(self) -> None:
        info = self._fresh_info(self.path, None)
        if info.get("type") == "file":
            raise not_a_folder(ArchiveFile(self.path, self.location, self.fs))

    def _fetch(self, names: Sequence[str], limit: int) -> list[Any]:
        """Each name's first ``limit + 1`` bytes or its exception, in one concurrent batch."""
        if _awaitable(self.fs):
            return run_on_loop(self.fs, self._fetch_coroutine, names, limit)
        paths = [self.path_of(name) for name in names]
        return list(self.fs.cat_ranges(paths, [0] * len(paths), [limit + 1] * len(paths), on_error="return"))

    async def _fetch_coroutine(self, names: Sequence[str], limit: int) -> list[Any]:
        paths = [self.path_of(name) for name in names]
        return list(
            await self.fs._cat_ranges(paths, [0] * len(paths), [limit + 1] * len(paths), on_error="return")
        )

    def _looks_like_bundle(self) -> bool:
        return kind_by_name(self.path) is not None

    def read_named_bundle(
        self, kind: ArchiveKind, names: Sequence[str], limit: int, exact_sizes: bool
    ) -> Reading | None:
        """The name says ``kind``: one HEAD first; ``None`` if no file is there."""
        info = self._fresh_info(self.path, None)
        if info.get("type") != "file":
            return None
        return self.open_bundle(kind, None, info).read_entries(names, limit, exact_sizes=exact_sizes)

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """One concurrent batch of capped reads; a home lookup only when nothing was there."""
        kind = kind_by_name(self.path)
        if kind is not None:
            reading = self.read_named_bundle(kind, names, limit, exact_sizes)
            if reading is not None:
                return reading
        with read_errors(self.location):
            results = self._fetch(names, limit)
        return self._finish(names, results, limit, exact_sizes)

    async def read_entries_async(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Reading:
        """Await the filesystem's own coroutines on its loop: no thread per persona."""
        if not _awaitable(self.fs) or self._looks_like_bundle():
            return await super().read_entries_async(names, limit, exact_sizes=exact_sizes)
        with read_errors(self.location):
            results = await await_on_loop(self.fs, self._fetch_coroutine(names, limit))
        found = [result for result in results if not isinstance(result, BaseException)]
        if found and not (exact_sizes and any(len(result) > limit for result in found)):  # no lookup
            return self._finish(names, results, limit, exact_sizes)
        return await asyncio.to_thread(self._finish, names, results, limit, exact_sizes)

    def _finish(self, names: Sequence[str], results: list[Any], limit: int, exact_sizes: bool) -> Reading:
        failure = _all_failed_alike(results)
        if failure is not None:
            raise read_error(failure, self.location, None) from failure
        entries = self._entries(names, results, limit, exact_sizes, folders=True)
        return Reading(self.location, entries) if entries else self._nothing_found(names, limit, exact_sizes)

    def _entries(
        self, names: Sequence[str], results: list[Any], limit: int, exact_sizes: bool, *, folders: bool
    ) -> dict[str, Entry]:
        """The batch's answers: a missing name left out, a folder an entry if ``folders``."""
        entries: dict[str, Entry] = {}
        for name, result in zip(names, results, strict=True):
            if isinstance(result, FileNotFoundError | IsADirectoryError):
                if folders and isinstance(result, IsADirectoryError):
                    entries[name] = Entry(None, why="folder")
                continue
            if isinstance(result, BaseException) and not is_empty_range_error(result):
                raise read_error(result, self.location, name) from result
            data = b"" if isinstance(result, BaseException) else bytes(result)
            size = len(data) if len(data) <= limit else None
            if size is None and exact_sizes:
                size = self._fresh_info(self.path_of(name), name)["size"]
            entries[name] = Entry(data, size)
        return entries

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        """One fresh listing, then one batch of capped reads; a lookup only for a bundle's name or
        a folder that lists nothing."""
        with read_errors(self.location, folder):
            listed = [] if self._looks_like_bundle() else self._listing(folder)
            home_is_folder = bool(listed) or (not self._looks_like_bundle() and self.fs.isdir(self.path))
        if not home_is_folder:
            info = self._fresh_info(self.path, None)
            if info.get("type") == "file":
                return self._bundle(info).read_folder(folder, limit, match=match)
            listed = self._listing(folder)  # a folder named like a bundle
        names = [f"{folder}/{path}" for path in listed if match is None or match(path)]
        with read_errors(self.location, folder):
            results = self._fetch(names, limit) if names else []
        return Reading(self.location, self._entries(names, results, limit, False, folders=False))

    def _listing(self, folder: str) -> list[str]:
        with read_errors(self.location, folder):
            return sorted(fsspec_files(self.fs, self.path_of(folder)))

    def _nothing_found(self, names: Sequence[str], limit: int, exact_sizes: bool) -> Reading:
        """No name was there: an empty home (one listing), a bundle, or no home at all."""
        self.fs.invalidate_cache(self.path)
        with read_errors(self.location):
            if self.fs.isdir(self.path):
                return Reading(self.location, {})
        info = self._fresh_info(self.path, None)
        if info.get("type") == "file":
            return self._bundle(info).read_entries(names, limit, exact_sizes=exact_sizes)
        return Reading(self.location, {})

    def _fresh_info(self, path: str, name: str | None) -> dict[str, Any]:
        """``fs.info`` past any cached listing; ``name`` is the file looked up, ``None`` the home."""
        self.fs.invalidate_cache(path)
        missing = f"{name} was removed while being read" if name else "no such persona home"
        with read_errors(self.location, name, missing=missing):
            info: dict[str, Any] = self.fs.info(path)
        return info


def _is_read_only(fs: Any) -> bool:
    from fsspec.archive import AbstractArchiveFileSystem  # noqa: PLC0415  (fsspec loads lazily)

    return isinstance(fs, AbstractArchiveFileSystem) or not READ_ONLY_PROTOCOLS.isdisjoint(protocols(fs))
