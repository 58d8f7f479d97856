"""Which personas live under a prefix: a streamed listing, one page at a time.

A persona is a direct child folder holding at least one bootstrap file, or a direct child whose
name says zip or tar bundle; the prefix itself is one when it holds a bootstrap file (it is
listed where its first bootstrap file is) or is a bundle. Whether a child folder holds a
bootstrap file is learnt by reading it (the read the audit makes anyway), so listing costs only
the prefix's own listing pages: on S3 ``ListObjectsV2`` with a delimiter, 1,000 names a page,
fetched as the audit needs them; locally one ``scandir``, streamed. Other fsspec filesystems
list the prefix with one ``ls`` (their names only are held). Files whose name says nothing
(``README.md``, ``aster.bin``) are not personas: an audit does not open every file to sniff it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from toolnexus._aio import run_on_loop
from toolnexus.composer.rules import BOOTSTRAP_ORDER
from toolnexus.errors import location_error, read_error
from toolnexus.sources import url_to_fs
from toolnexus.sources.registry import kind_by_name
from toolnexus.sources.s3_requests import is_s3

__all__ = ["LIST_PAGE_SIZE", "Candidate", "Listing", "Target", "list_prefix"]

#: Names per S3 listing page (S3's own maximum) and per page of a local scan.
LIST_PAGE_SIZE = 1000

#: ``(path, always)``: where a persona may be, and whether it is one even when nothing is found
#: there (a bundle, the prefix itself) rather than a folder that turned out to hold no bootstrap file.
Candidate = tuple[str, bool]

_BOOTSTRAP_NAMES = frozenset(BOOTSTRAP_ORDER)


@dataclass(frozen=True)
class Target:
    """How a listed path becomes a source — here or on a worker, so it pickles (fsspec
    filesystems are re-created from their arguments). ``fs=None``: local paths and chained URLs."""

    fs: Any = None
    storage_options: Mapping[str, Any] | None = None
    follow_external_symlinks: bool = False

    @property
    def local(self) -> bool:
        """Local disk: read in order, in the calling thread (syscalls, no network to wait on)."""
        return self.fs is None and not self.storage_options

    def options(self) -> dict[str, Any]:
        """What ``inspect_soul`` takes besides the path (a path, not a source: resolving a plain
        path is the fast path, checking an object against the source protocol is not)."""
        return {
            "fs": self.fs,
            "storage_options": self.storage_options,
            "follow_external_symlinks": self.follow_external_symlinks,
        }

    def location(self, path: str) -> str:
        """The persona's name in results: its path, as a URL on a remote filesystem."""
        return str(self.fs.unstrip_protocol(path)) if self.fs is not None else path


@dataclass
class Listing:
    """The prefix's location, how its paths are read, and its candidates page by page."""

    location: str
    target: Target
    pages: Iterator[list[Candidate]]


def list_prefix(
    prefix: Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    follow_external_symlinks: bool = False,
    pool: int = 10,
) -> Listing:
    """Look the prefix up now (a missing one is a :class:`FileNotFoundError` naming it) and list
    it lazily. ``pool``: S3 connections to allow when the filesystem is built here."""
    if fs is None and not isinstance(prefix, str | os.PathLike) and hasattr(prefix, "fs"):
        fs, prefix = prefix.fs, str(prefix.path)  # a UPath carries its filesystem and options
    path = os.fspath(prefix) if isinstance(prefix, os.PathLike) else prefix
    if not isinstance(path, str):
        raise TypeError(f"expected a prefix path, URL or UPath, not {type(prefix).__name__}")
    if not path:
        raise ValueError("empty prefix: name a folder ('.' for the current one) or a URL")
    if fs is not None and storage_options:
        raise TypeError("pass storage_options or fs=, not both: options are for building a filesystem")
    target = Target(None, None, follow_external_symlinks)
    if fs is None and "::" in path:  # a chained URL names one bundle: it is the one persona
        chained = Target(None, dict(storage_options or {}), follow_external_symlinks)
        return Listing(path, chained, iter([[(path, True)]]))
    if fs is None and "://" in path:
        fs, path = url_to_fs(path, _with_pool(path, storage_options, pool))
    elif fs is None and storage_options:
        raise TypeError(f"storage_options cannot apply to the local path {path!r}")
    if fs is not None and not _is_local(fs):
        target = Target(fs, None, follow_external_symlinks)
        return Listing(str(fs.unstrip_protocol(path)), target, _remote_pages(fs, fs._strip_protocol(path)))
    if fs is not None:
        path = fs._strip_protocol(path)
    root = os.path.abspath(path)
    return Listing(root, target, _local_pages(root))


def _with_pool(url: str, options: Mapping[str, Any] | None, pool: int) -> dict[str, Any]:
    """botocore keeps 10 connections unless told otherwise: an audit with 64 personas in flight
    (7 GETs each) would wait on its own pool. Unkeyed options are the S3 hop's for an s3 URL."""
    options = dict(options or {})
    if url.split("://", 1)[0] in ("s3", "s3a"):
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("max_pool_connections", pool)
        options["config_kwargs"] = config
    return options


def _is_local(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem  # noqa: PLC0415

    return isinstance(fs, LocalFileSystem)


class _Classifier:
    """Turns listed names into candidates, in listing order; the prefix counts once."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.home_seen = False

    def __call__(self, name: str, is_dir: bool, path: str) -> Candidate | None:
        if is_dir:
            return (path, False)
        if name in _BOOTSTRAP_NAMES:
            if self.home_seen:
                return None
            self.home_seen = True
            return (self.prefix, True)
        if kind_by_name(name) is not None:
            return (path, True)
        return None


def _no_such_prefix(location: str) -> OSError:
    return location_error(FileNotFoundError, location, "no such prefix")


def _local_pages(root: str) -> Iterator[list[Candidate]]:
    """Checked now (missing → error; a file → the one persona); scanned when first asked."""
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        raise _no_such_prefix(root) from None
    except OSError as error:
        raise read_error(error, root, None) from error
    if not stat.S_ISDIR(mode):
        return iter([[(root, True)]])
    return _scan(root)


def _scan(root: str) -> Iterator[list[Candidate]]:
    classify = _Classifier(root)
    page: list[Candidate] = []
    try:
        with os.scandir(root) as scan:
            for entry in scan:
                candidate = classify(entry.name, entry.is_dir(), entry.path)
                if candidate is not None:
                    page.append(candidate)
                if len(page) >= LIST_PAGE_SIZE:
                    yield page
                    page = []
    except OSError as error:
        raise read_error(error, root, None) from error
    if page:
        yield page


def _remote_pages(fs: Any, path: str) -> Iterator[list[Candidate]]:
    """The first page now (so a missing prefix fails at the call), the rest on demand."""
    path = path.rstrip("/") or path
    location = str(fs.unstrip_protocol(path))
    if is_s3(fs):
        pages = _s3_pages(fs, path, location)
        first = next(pages, None)
        if first is None:
            return _file_or_missing(fs, path, location)
        return _chain(first, pages)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise _no_such_prefix(location) from None
    if info.get("type") != "directory":
        return iter([[(path, True)]])
    classify = _Classifier(path)
    listed = sorted(fs.ls(path, detail=True), key=lambda entry: str(entry["name"]))
    page = [
        candidate
        for entry in listed
        if (name := str(entry["name"]).rstrip("/")) != path
        and (candidate := classify(name.rsplit("/", 1)[-1], entry.get("type") == "directory", name))
    ]
    return iter([page])


def _chain(first: list[Candidate], rest: Iterator[list[Candidate]]) -> Iterator[list[Candidate]]:
    yield first
    yield from rest


def _file_or_missing(fs: Any, path: str, location: str) -> Iterator[list[Candidate]]:
    """Nothing under ``path/``: it is a file (a bundle, the one persona) or no prefix at all."""
    try:
        fs.invalidate_cache(path)
        info = fs.info(path)
    except FileNotFoundError:
        raise _no_such_prefix(location) from None
    except Exception as error:
        raise read_error(error, location, None) from error
    if info.get("type") == "file":
        return iter([[(path, True)]])
    return iter([])  # an empty "folder" (a marker object): no personas


def _s3_pages(fs: Any, path: str, location: str) -> Iterator[list[Candidate]]:
    """``ListObjectsV2`` with a delimiter, page by page; a page's folders and objects are merged
    by key, so the whole listing is in key order. The first page is ``None``-free: an empty
    listing yields nothing at all."""
    bucket, key, _ = fs.split_path(path)
    prefix = f"{key}/" if key else ""
    classify = _Classifier(path)
    request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
    empty = True
    while True:
        try:
            page = run_on_loop(fs, fs._call_s3, "list_objects_v2", MaxKeys=LIST_PAGE_SIZE, **request)
        except FileNotFoundError:  # no such bucket
            raise _no_such_prefix(location) from None
        except Exception as error:
            raise read_error(error, location, None) from error
        folders = [(item["Prefix"].rstrip("/"), True) for item in page.get("CommonPrefixes", ())]
        objects = [(item["Key"], False) for item in page.get("Contents", ()) if item["Key"] != prefix]
        candidates = [
            candidate
            for name, is_dir in sorted(folders + objects)
            if (candidate := classify(name[len(prefix) :], is_dir, f"{bucket}/{name}"))
        ]
        empty = empty and not (folders or objects)
        if not empty:
            yield candidates
        if not page.get("IsTruncated"):
            return
        request["ContinuationToken"] = page["NextContinuationToken"]
