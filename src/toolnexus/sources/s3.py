"""Persona homes on S3 (s3fs): one backend, read, written and revalidated the S3 way.

- **Reading** a folder is :class:`FsspecSource`'s batch of capped ranged GETs (one round trip);
  a zip bundle is read from its tail (:mod:`.s3_bundle`): one suffix-range GET, no HEAD, for a
  small bundle, and a home named ``*.zip`` is tried that way before anything else.
- **Writing** is :class:`S3Store`: ``If-Match`` / ``If-None-Match: *`` on the PUT, once the probe
  has seen the server enforce them.
- **Listing** (``audit``): ``ListObjectsV2`` with a delimiter, one page at a time.
- **Freshness** (:mod:`.object_home`, shared with the obstore engine): a folder costs one GET per
  name with ``If-None-Match: <etag>``, all in flight together (an unchanged file is a 304 with no
  body, a missing one a 404, a changed one its new bytes); a zip bundle the tail GET with
  ``If-None-Match`` (unchanged: one bodiless 304).

Registered in ``sources/__init__.py`` for the ``s3`` and ``s3a`` protocols (extra ``s3``).
"""

from __future__ import annotations

import itertools
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from toolnexus._aio import await_on_loop, run_on_loop
from toolnexus.errors import read_error
from toolnexus.sources.base import Reading, SourceBase
from toolnexus.sources.bundle import ZIP
from toolnexus.sources.children import LIST_PAGE_SIZE, Child, Pages, no_such_prefix
from toolnexus.sources.freshness import Changes, NotModified, Validators
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.object_home import ObjectHome
from toolnexus.sources.registry import ArchiveKind
from toolnexus.sources.remote import conditional_gets
from toolnexus.sources.s3_bundle import S3Remote
from toolnexus.sources.s3_requests import S3Object, get_object
from toolnexus.sources.tail_archive import TailZipBundle
from toolnexus.stores import S3Store

__all__ = ["S3Source", "S3ZipBundle"]

T = TypeVar("T")


class S3Source(ObjectHome, FsspecSource):
    """A persona home on S3: ``S3Source(s3fs.S3FileSystem(), "bucket/aster")``."""

    conditional_store = S3Store

    def open_bundle(self, kind: ArchiveKind, folder: str | None = None, info: Any = None) -> SourceBase:
        """A zip is read from its tail (the size comes with it: no HEAD); other kinds as anywhere."""
        if kind is ZIP:
            return S3ZipBundle(self.fs, self.path, folder=folder)
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

    @classmethod
    def concurrent_options(cls, storage_options: Mapping[str, Any], reads: int) -> dict[str, Any]:
        """botocore keeps 10 connections unless told otherwise: ``reads`` requests in flight
        would queue on the client's own pool. Unkeyed options are the S3 hop's."""
        options = dict(storage_options)
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("max_pool_connections", reads)
        return {**options, "config_kwargs": config}

    def children(self) -> Pages | None:
        """``ListObjectsV2`` with a delimiter, :data:`.children.LIST_PAGE_SIZE` names a page,
        fetched as the pages are asked for (the first one now: a missing prefix fails here). Each
        page's folders and objects are merged by key, so the listing is in key order. Nothing
        under ``path/``: a file is a bundle (``None``), anything else no such prefix."""
        pages = self._list_pages()
        first = next(pages, None)
        if first is not None:
            return itertools.chain([first], pages)
        self.fs.invalidate_cache(self.path)
        try:
            kind = self.fs.info(self.path).get("type")
        except FileNotFoundError:
            raise no_such_prefix(self.location) from None
        except Exception as error:
            raise read_error(error, self.location, None) from error
        return None if kind == "file" else iter([])  # a folder marker alone: no children

    def _list_pages(self) -> Pages:
        """The listing, page by page; nothing at all when the prefix holds no object."""
        bucket, key, _ = self.fs.split_path(self.path.rstrip("/"))
        prefix = f"{key}/" if key else ""
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
        seen = False
        while True:
            try:
                page = run_on_loop(
                    self.fs, self.fs._call_s3, "list_objects_v2", MaxKeys=LIST_PAGE_SIZE, **request
                )
            except FileNotFoundError:  # no such bucket
                raise no_such_prefix(self.location) from None
            except Exception as error:
                raise read_error(error, self.location, None) from error
            folders = [(item["Prefix"].rstrip("/"), True) for item in page.get("CommonPrefixes", ())]
            objects = [(item["Key"], False) for item in page.get("Contents", ()) if item["Key"] != prefix]
            seen = seen or bool(folders or objects)
            if seen:
                yield [
                    Child(key[len(prefix) :], f"{bucket}/{key}", folder)
                    for key, folder in sorted(folders + objects)
                ]
            if not page.get("IsTruncated"):
                return
            request["ContinuationToken"] = page["NextContinuationToken"]

    def remote(self, path: str) -> S3Remote:
        return S3Remote(self.fs, path)

    async def on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """s3fs's coroutines run on its own loop: no thread per persona."""
        result: T = await await_on_loop(self.fs, coroutine)
        return result

    async def conditional_gets(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | None:
        def fetch(name: str, etag: str | None) -> Coroutine[Any, Any, S3Object | NotModified]:
            return get_object(self.fs, self.path_of(name), f"bytes=0-{limit}", if_none_match=etag)

        return await conditional_gets(self.location, since, names, fetch)


class S3ZipBundle(TailZipBundle):
    """A zip bundle on S3 through s3fs, read from its tail and revalidated by its ETag."""

    def __init__(self, fs: Any, path: str, location: str | None = None, folder: str | None = None) -> None:
        super().__init__(S3Remote(fs, path), folder)
        self.fs = fs
        self.path = path
