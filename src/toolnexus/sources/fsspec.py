"""Any fsspec filesystem: one batch of capped reads, issued concurrently on async backends.

The read of a home is a single ``cat_ranges`` call asking each bootstrap path for bytes
``[0, limit + 1)``: on S3 that is one ranged GET per name, all in flight together, with no LIST and
no HEAD — one round trip. Only when *every* name is missing is the home itself looked up: one
fresh ``isdir`` (on S3 a single LIST) tells an empty home; only if that fails is the path itself
looked up (a HEAD), to find a zip bundle or report a missing home. Listing caches are invalidated
before each lookup, so none is ever stale.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from toolnexus._aio import await_on_loop
from toolnexus._fs import is_empty_range_error
from toolnexus.errors import location_error, read_error
from toolnexus.sources.base import Entry, Reading, SourceBase, read_only
from toolnexus.sources.registry import ArchiveFile, archive_for_file, kind_by_name, not_a_folder
from toolnexus.sources.s3_requests import is_s3
from toolnexus.stores import MemoryStore, fsspec_store

__all__ = ["READ_ONLY_PROTOCOLS", "FsspecSource"]

#: fsspec protocols that cannot write; archive filesystems (zip, tar, …) are recognised by class too.
READ_ONLY_PROTOCOLS = frozenset({"http", "https", "zip", "tar", "libarchive", "github", "git", "reference"})


def _means_absent_or_empty(result: BaseException) -> bool:
    """Per-name outcomes that are answers, not failures."""
    return isinstance(result, FileNotFoundError | IsADirectoryError) or is_empty_range_error(result)


def _awaitable(fs: Any) -> bool:
    """Whether ``fs``'s coroutines really are async. A wrapper such as ``DirFileSystem`` claims
    ``async_impl`` whatever it wraps, and delegates the coroutines to a sync filesystem that has none."""
    while True:
        if not getattr(fs, "async_impl", False):
            return False
        inner = getattr(fs, "fs", None)
        if inner is None or not hasattr(inner, "async_impl"):
            return True
        fs = inner


class FsspecSource(SourceBase):
    """A persona home on any fsspec filesystem: ``FsspecSource(s3fs.S3FileSystem(), "bucket/aster")``.

    ``path`` is in the filesystem's own form (no protocol). If it turns out to be a file, it is
    opened as a bundle (the registry decides which kind).
    """

    def __init__(self, fs: Any, path: str) -> None:
        self.fs = fs
        self.path = path
        self.location = str(fs.unstrip_protocol(path))

    def path_of(self, name: str) -> str:
        base = self.path.rstrip("/")
        if base:
            return f"{base}/{name}"
        return f"/{name}" if self.path.startswith("/") else name

    def _bundle(self, info: dict[str, Any]) -> SourceBase:
        """The home is a file: a bundle, opened with the size just looked up (no second HEAD)."""
        return archive_for_file(ArchiveFile(self.path, self.location, self.fs, info))

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """The stores module decides how (conditional PUT, in-process lock, or refuse); read-only
        filesystems (HTTP, archives, git, …) are refused here, naming the filesystem."""
        if _is_read_only(self.fs):
            raise read_only(self.location, f"on a read-only {type(self.fs).__name__}", "it has no write side")
        return fsspec_store(self, name, single_writer=single_writer)

    def not_a_folder(self) -> OSError:
        """The error for writing to a home that is a file (a read-only bundle, or no folder)."""
        return not_a_folder(ArchiveFile(self.path, self.location, self.fs))

    def _cat_arguments(self, names: Sequence[str], limit: int) -> tuple[list[str], list[int], list[int]]:
        return [self.path_of(name) for name in names], [0] * len(names), [limit + 1] * len(names)

    def _fetch(self, names: Sequence[str], limit: int) -> list[Any]:
        """Each name's first ``limit + 1`` bytes or its exception, in one concurrent batch."""
        results: list[Any] = self.fs.cat_ranges(*self._cat_arguments(names, limit), on_error="return")
        return results

    def _fetch_coroutine(self, names: Sequence[str], limit: int) -> Coroutine[Any, Any, list[Any]]:
        """:meth:`_fetch` as the async filesystem's own coroutine."""
        coroutine: Coroutine[Any, Any, list[Any]] = self.fs._cat_ranges(
            *self._cat_arguments(names, limit), on_error="return"
        )
        return coroutine

    def _looks_like_bundle(self) -> bool:
        """A name that says "bundle" (``.zip``, ``.tgz``, …) is looked up first, sparing the reads."""
        return kind_by_name(self.path) is not None

    def _is_s3_zip(self) -> bool:
        """A zip on S3 is read from its tail, with no HEAD first (see :mod:`.s3_bundle`)."""
        kind = kind_by_name(self.path)
        return kind is not None and kind.protocol == "zip" and is_s3(self.fs)

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """One concurrent batch of capped reads; a home lookup only when nothing was there."""
        if self._is_s3_zip():
            bundle = archive_for_file(ArchiveFile(self.path, self.location, self.fs))
            try:
                return bundle.read_entries(names, limit, exact_sizes=exact_sizes)
            except FileNotFoundError:
                pass  # no such object: a folder named *.zip, or no home (the reads below tell)
        elif self._looks_like_bundle():
            info = self._fresh_info(self.path, None)
            if info.get("type") == "file":
                return self._bundle(info).read_entries(names, limit, exact_sizes=exact_sizes)
        try:
            results = self._fetch(names, limit)
        except Exception as error:
            raise read_error(error, self.location, None) from error
        return self._finish(names, results, limit, exact_sizes)

    async def read_entries_async(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Reading:
        """Await the filesystem's own coroutines on its loop: no thread per persona."""
        if not _awaitable(self.fs) or self._looks_like_bundle():
            return await super().read_entries_async(names, limit, exact_sizes=exact_sizes)
        coroutine = self._fetch_coroutine(names, limit)
        try:
            results = await await_on_loop(self.fs, coroutine)
        except Exception as error:
            raise read_error(error, self.location, None) from error
        if any(not isinstance(result, BaseException) for result in results) and not exact_sizes:
            return self._finish(names, results, limit, exact_sizes)
        return await asyncio.to_thread(self._finish, names, results, limit, exact_sizes)

    def _finish(self, names: Sequence[str], results: list[Any], limit: int, exact_sizes: bool) -> Reading:
        self._raise_if_all_failed_alike(results)
        entries: dict[str, Entry] = {}
        for name, result in zip(names, results, strict=True):
            if isinstance(result, FileNotFoundError):
                continue
            if isinstance(result, IsADirectoryError):
                entries[name] = Entry(None)
                continue
            if is_empty_range_error(result):
                data = b""
            elif isinstance(result, BaseException):
                raise read_error(result, self.location, name) from result
            else:
                data = bytes(result)
            size = len(data) if len(data) <= limit else None
            if size is None and exact_sizes:
                size = self._fresh_info(self.path_of(name), name)["size"]
            entries[name] = Entry(data, size)
        if entries:
            return Reading(self.location, entries)
        return self._nothing_found(names, limit, exact_sizes)

    def _raise_if_all_failed_alike(self, results: list[Any]) -> None:
        """Every read failing the same way (no credentials, a stalled endpoint, a denied prefix)
        is about the home, not about whichever file happens to come first: say so."""
        failures = [r for r in results if isinstance(r, Exception) and not _means_absent_or_empty(r)]
        if len(failures) == len(results) > 1 and len({(type(f), str(f)) for f in failures}) == 1:
            raise read_error(failures[0], self.location, None) from failures[0]

    def _nothing_found(self, names: Sequence[str], limit: int, exact_sizes: bool) -> Reading:
        """No name was there: an empty home (one listing), a bundle, or no home at all."""
        self.fs.invalidate_cache(self.path)
        try:
            if self.fs.isdir(self.path):
                return Reading(self.location, {})
        except Exception as error:
            raise read_error(error, self.location, None) from error
        info = self._fresh_info(self.path, None)
        if info.get("type") == "file":
            return self._bundle(info).read_entries(names, limit, exact_sizes=exact_sizes)
        return Reading(self.location, {})

    def _fresh_info(self, path: str, name: str | None) -> dict[str, Any]:
        """``fs.info`` past any cached listing; ``name`` is the file looked up, ``None`` the home."""
        self.fs.invalidate_cache(path)
        try:
            info: dict[str, Any] = self.fs.info(path)
        except FileNotFoundError:
            reason = f"{name} was removed while being read" if name else "no such persona home"
            raise location_error(FileNotFoundError, self.location, reason) from None
        except Exception as error:
            raise read_error(error, self.location, name) from error
        return info


def _is_read_only(fs: Any) -> bool:
    from fsspec.archive import AbstractArchiveFileSystem  # noqa: PLC0415  (fsspec loads lazily)

    protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
    return isinstance(fs, AbstractArchiveFileSystem) or bool(protocols & READ_ONLY_PROTOCOLS)
