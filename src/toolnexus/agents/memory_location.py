"""Where ``memory_tool`` writes: a location resolved by ``open_source`` becomes a writable store.

Resolution reuses the core's dispatch (``open_source``) and only then asks whether the result can
be written, so every form ``compose_soul`` accepts means the same home here.
"""

from __future__ import annotations

import os
import stat
import zipfile
from typing import Any

from .errors import BootstrapError, location_error, read_error
from .memory_store import MEMORY_FILE, FsspecStore, LocalStore, MemoryStore, S3Store
from .sources import BootstrapSource, BundleSource, FsspecSource, LocalSource

__all__ = ["READ_ONLY_PROTOCOLS", "open_store"]


#: fsspec protocols that cannot write; archive filesystems (zip, tar, …) are recognised by class too.
READ_ONLY_PROTOCOLS = frozenset({"http", "https", "zip", "tar", "libarchive", "github", "git", "reference"})


def _not_writable(location: str, what: str) -> BootstrapError:
    return BootstrapError(
        f"{location}: is {what}, which memory_tool cannot write; point it at a writable persona folder"
    )


def open_store(source: BootstrapSource, name: str = MEMORY_FILE) -> MemoryStore:
    """The store editing ``name`` in a location already resolved by ``open_source``; unwritable
    ones fail here.

    A zip bundle (by path or ``zip://`` URL) or a read-only filesystem raises
    :class:`BootstrapError`; a missing home :class:`FileNotFoundError`; a plain file
    :class:`NotADirectoryError`; a local folder without write access :class:`PermissionError`;
    a custom :class:`BootstrapSource` :class:`TypeError` (it has no write side).
    """
    if isinstance(source, LocalSource):
        return _local_store(source.root, name)
    if isinstance(source, BundleSource):
        raise _not_writable(source.location, "a zip bundle (read-only)")
    if isinstance(source, FsspecSource):
        return _remote_store(source, name)
    raise TypeError(
        f"memory_tool needs a location it can write (a path, URL, fs= or UPath), "
        f"not a {type(source).__name__}, which can only be read"
    )


def _local_store(root: str, name: str) -> MemoryStore:
    """A local folder that exists and can be written; a file there is a bundle or a mistake."""
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        raise location_error(FileNotFoundError, root, "no such persona home") from None
    if not stat.S_ISDIR(mode):
        if zipfile.is_zipfile(root):
            raise _not_writable(root, "a zip bundle (read-only)")
        raise location_error(NotADirectoryError, root, "is a file, not a persona folder")
    if not os.access(root, os.W_OK | os.X_OK):
        raise location_error(PermissionError, root, "is not writable: MEMORY.md cannot be saved")
    return LocalStore(root, name)


def _is_read_only(fs: Any) -> bool:
    from fsspec.archive import AbstractArchiveFileSystem  # noqa: PLC0415  (remote homes only)

    protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
    return isinstance(fs, AbstractArchiveFileSystem) or bool(protocols & READ_ONLY_PROTOCOLS)


def _remote_store(source: FsspecSource, name: str) -> MemoryStore:
    """One fresh lookup of the home: it must exist and be a folder (an S3 prefix with objects)."""
    fs, home, location = source.fs, source.path, source.location
    if _is_read_only(fs):
        raise _not_writable(location, f"on a read-only {type(fs).__name__}")
    fs.invalidate_cache(home)
    try:
        info = fs.info(home)
    except FileNotFoundError:
        raise location_error(FileNotFoundError, location, "no such persona home") from None
    except Exception as error:
        raise read_error(error, location, None) from error
    if info.get("type") == "file":
        if home.lower().endswith(".zip"):
            raise _not_writable(location, "a zip bundle (read-only)")
        raise location_error(NotADirectoryError, location, "is a file, not a persona folder")
    if callable(getattr(fs, "_call_s3", None)):
        return S3Store(source, name)
    return FsspecStore(source, name)
