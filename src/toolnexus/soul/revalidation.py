"""How :class:`SoulCache` asks each backend "what changed?" — the cheapest proof per backend.

* **Local folder**: one scan (which also sees added and removed names), then one ``fstatat`` per
  present file. A file whose (device, inode, size, mtime_ns, ctime_ns) all match is neither read
  nor decoded. A file changed less than :data:`RACY_SECONDS` ago is never trusted by its stat
  (two same-size writes within one timestamp tick look identical), so it is read every call
  until it has aged; symlinked bootstrap files are read every call (their rule is re-applied).
* **Local bundle**: the archive's own stat, with the same rule; unchanged means every member is.
* **S3 folder**: one GET per name with ``If-None-Match: <etag>`` — all in flight together; an
  unchanged file is a 304 with no body, a missing one a 404, a changed one its new bytes.
* **S3 zip bundle**: the suffix-range GET of :mod:`.sources.s3_bundle` with ``If-None-Match``;
  an unchanged bundle is one 304.
* **Anything else** (other fsspec filesystems, user sources): read as usual; a file whose bytes
  hash the same is not decoded again. Always correct, saves only the decoding.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import IO, Any, cast

from toolnexus._aio import run_on_loop
from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose
from toolnexus.errors import read_error
from toolnexus.sources import BootstrapSource, BundleSource, FsspecSource, LocalSource, Reading, read_entries
from toolnexus.sources.local import DIR_FLAGS, HAS_DIR_FD
from toolnexus.sources.registry import kind_by_name
from toolnexus.sources.s3_bundle import open_tail_archive
from toolnexus.sources.s3_requests import NotModified, S3Object, get_object, is_s3

__all__ = ["RACY_SECONDS", "CachedFile", "Snapshot", "read_fully", "revalidate_s3_home", "revalidate_sync"]

#: A local file changed less than this long ago is re-read on every call: file timestamps tick
#: coarsely (a kernel jiffy; 2 s on FAT; a server clock on NFS), so a same-size rewrite within
#: one tick would keep the stat the cache saw.
RACY_SECONDS = 3.0

LIMIT = MAX_BOOTSTRAP_FILE_BYTES
_BOOTSTRAP_NAMES = frozenset(BOOTSTRAP_ORDER)

#: The wall clock file timestamps are compared with (a seam for tests that age files).
_now = time.time


@dataclass(frozen=True, slots=True)
class CachedFile:
    """One present file: what proves it unchanged (``None``: nothing does) and its section."""

    validator: Hashable | None
    section: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One persona as last validated: its files, a whole-home validator (bundles), the soul."""

    location: str
    files: Mapping[str, CachedFile]
    tag: Hashable | None
    soul: str
    found: tuple[str, ...]


def _section(location: str, name: str, data: bytes, size: int | None) -> str:
    sizes = {} if size is None else {name: size}
    return compose(location, {name: data}, limit=LIMIT, sizes=sizes)[0]


def snapshot(
    location: str, files: dict[str, CachedFile], tag: Hashable | None, old: Snapshot | None
) -> Snapshot:
    """Assemble the soul from sections in order; reuse the old soul when nothing changed."""
    found = tuple(name for name in BOOTSTRAP_ORDER if name in files)
    if old is not None and old.found == found and all(old.files[n] is files[n] for n in found):
        return Snapshot(location, files, tag, old.soul, found)
    soul = "\n\n".join(files[name].section for name in found)
    return Snapshot(location, files, tag, soul, found)


def _from_reading(reading: Reading, old: Snapshot | None, tag: Hashable | None) -> Snapshot:
    """Any source's full reading: files whose bytes hash the same keep their decoded section."""
    files: dict[str, CachedFile] = {}
    previous = {} if old is None else old.files
    for name, entry in reading.entries.items():
        if entry.data is None:
            continue
        digest = ("blake2b", hashlib.blake2b(entry.data, digest_size=16).digest())
        kept = previous.get(name)
        if kept is not None and kept.validator == digest:
            files[name] = kept
        else:
            files[name] = CachedFile(digest, _section(reading.location, name, entry.data, entry.size))
    return snapshot(reading.location, files, tag, old)


def _stat_validator(info: os.stat_result, trusted_before_ns: int) -> Hashable | None:
    """The stat that proves a file unchanged, or ``None`` while it is too recent to trust."""
    if info.st_mtime_ns >= trusted_before_ns or info.st_ctime_ns >= trusted_before_ns:
        return None
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _revalidate_local(source: LocalSource, old: Snapshot | None) -> Snapshot:
    """One ``fstat`` of the folder (a listing only if it changed), one ``fstatat`` per present name;
    only files whose stat changed are read (through the source's own read, so the symlink rule
    and its errors apply unchanged).

    When nothing changed the old snapshot itself is returned: the hot path builds nothing.
    """
    if not HAS_DIR_FD:
        return read_fully(source, old)
    trusted_before_ns = int((_now() - RACY_SECONDS) * 1e9)
    try:
        dir_fd = os.open(source.root, DIR_FLAGS)
    except NotADirectoryError:
        return _revalidate_local_bundle(source, old, trusted_before_ns)
    except OSError:
        return read_fully(source, old)  # the source's read raises the right error
    previous = {} if old is None else old.files
    files: dict[str, CachedFile] = {}
    stale: dict[str, Hashable | None] = {}
    try:
        # The folder's own stat proves its listing unchanged (an added, removed or renamed entry
        # changes the folder's mtime and ctime), with the same racy window as for files.
        listing = _stat_validator(os.fstat(dir_fd), trusted_before_ns)
        if listing is not None and old is not None and isinstance(old.tag, tuple) and old.tag[0] == listing:
            present: frozenset[str] = old.tag[1]
        else:
            present = _BOOTSTRAP_NAMES.intersection(os.listdir(dir_fd))
        tag = (listing, present)
        for name in BOOTSTRAP_ORDER:
            if name not in present:
                continue
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as error:
                raise read_error(error, source.location, name) from error
            validator = _stat_validator(info, trusted_before_ns) if stat.S_ISREG(info.st_mode) else None
            kept = previous.get(name)
            if validator is not None and kept is not None and kept.validator == validator:
                files[name] = kept
            else:
                stale[name] = validator
    finally:
        os.close(dir_fd)
    if not stale and old is not None and len(files) == len(previous) and old.tag == tag:
        return old
    if stale:
        reading = source.read_entries(list(stale), LIMIT)
        for name, entry in reading.entries.items():
            if entry.data is not None:
                section = _section(source.location, name, entry.data, entry.size)
                files[name] = CachedFile(stale[name], section)
    return snapshot(source.location, files, tag, old)


def _revalidate_local_bundle(source: LocalSource, old: Snapshot | None, trusted_before_ns: int) -> Snapshot:
    try:
        info = os.stat(source.root)
    except OSError as error:
        raise read_error(error, source.location, None) from error
    tag = _stat_validator(info, trusted_before_ns) if stat.S_ISREG(info.st_mode) else None
    if tag is not None and old is not None and old.tag == tag:
        return old
    return _from_reading(source.bundle().read_entries(BOOTSTRAP_ORDER, LIMIT), old, tag)


async def revalidate_s3_home(source: FsspecSource, old: Snapshot | None) -> Snapshot | None:
    """Conditional GETs of every name, together; ``None`` when no name is there (the caller then
    reads the source as usual, which tells an empty home, a bundle or no home at all)."""
    previous = {} if old is None else old.files

    async def fetch(name: str) -> S3Object | NotModified | BaseException | None:
        kept = previous.get(name)
        etag = None if kept is None else kept.validator
        try:
            return await get_object(
                source.fs,
                source.path_of(name),
                f"bytes=0-{LIMIT}",
                if_none_match=etag if isinstance(etag, str) else None,
            )
        except FileNotFoundError:
            return None
        except Exception as error:  # reported below, against the file
            return error

    results = await asyncio.gather(*(fetch(name) for name in BOOTSTRAP_ORDER))
    files: dict[str, CachedFile] = {}
    for name, result in zip(BOOTSTRAP_ORDER, results, strict=True):
        if isinstance(result, BaseException):
            raise read_error(result, source.location, name) from result
        if isinstance(result, NotModified):
            files[name] = previous[name]
        elif result is not None:
            size = result.size if result.etag is not None else len(result.body)
            section = _section(source.location, name, result.body, size)
            files[name] = CachedFile(result.etag, section)
    if not files:
        return None
    return snapshot(source.location, files, None, old)


def _revalidate_s3_bundle(
    fs: Any, path: str, location: str, folder: str | None, old: Snapshot | None
) -> Snapshot | None:
    """One conditional suffix-range GET: a 304 keeps everything; otherwise the new bundle is read."""
    etag = old.tag if old is not None and isinstance(old.tag, str) else None
    try:
        archive = open_tail_archive(fs, path, BOOTSTRAP_ORDER, LIMIT, folder=folder, if_none_match=etag)
    except FileNotFoundError:
        return None  # not an object (a folder named *.zip, or nothing): the usual read decides
    except Exception as error:
        raise read_error(error, location, None) from error
    if isinstance(archive, NotModified):
        assert old is not None
        return old
    bundle = BundleSource(lambda: cast(IO[bytes], archive), location, folder)
    return _from_reading(bundle.read_entries(BOOTSTRAP_ORDER, LIMIT), old, archive.etag)


def is_s3_home(source: BootstrapSource) -> bool:
    """A folder on S3, revalidated with conditional GETs natively on the filesystem's loop."""
    return isinstance(source, FsspecSource) and is_s3(source.fs) and kind_by_name(source.path) is None


def _is_s3_zip(source: BootstrapSource) -> bool:
    if not isinstance(source, FsspecSource) or not is_s3(source.fs):
        return False
    kind = kind_by_name(source.path)
    return kind is not None and kind.protocol == "zip"


def revalidate_sync(source: BootstrapSource, old: Snapshot | None) -> Snapshot:
    """The cheapest full revalidation of ``source`` against ``old``; see the module."""
    if isinstance(source, LocalSource):
        return _revalidate_local(source, old)
    fresh: Snapshot | None = None
    if is_s3_home(source):
        assert isinstance(source, FsspecSource)
        fresh = run_on_loop(source.fs, revalidate_s3_home, source, old)
    elif _is_s3_zip(source):
        assert isinstance(source, FsspecSource)
        fresh = _revalidate_s3_bundle(source.fs, source.path, source.location, None, old)
    elif isinstance(source, BundleSource) and source.s3_archive is not None:
        fs, path = source.s3_archive
        fresh = _revalidate_s3_bundle(fs, path, source.location, source.folder, old)
    if fresh is not None:
        return fresh
    return read_fully(source, old)


def read_fully(source: BootstrapSource, old: Snapshot | None) -> Snapshot:
    """The source's usual read; only decoding is saved (files whose bytes hash the same)."""
    return _from_reading(read_entries(source, BOOTSTRAP_ORDER, LIMIT), old, None)
