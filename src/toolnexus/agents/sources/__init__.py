"""Sources of bootstrap files, the registry of archive kinds, and :func:`resolve`.

:func:`resolve` (in :mod:`.resolve`) is the one place a location becomes a source; which kind of
bundle a file is, is decided by :mod:`.registry`. A built-in archive kind is registered below,
one line each: a new one is a module plus a line here.
"""

from __future__ import annotations

from .base import (
    BootstrapSource,
    Entry,
    EntrySourceBase,
    Reading,
    SourceBase,
    read_entries,
    read_entries_async,
    read_only,
    writer_of,
)
from .bundle import ZIP, BundleSource
from .fsspec import FsspecSource
from .local import LocalSource
from .registry import ArchiveFile, ArchiveKind, archive_kinds, register_archive
from .resolve import Location, is_url, resolve, resolve_output, url_to_fs

__all__ = [
    "ArchiveFile",
    "ArchiveKind",
    "BootstrapSource",
    "BundleSource",
    "Entry",
    "EntrySourceBase",
    "FsspecSource",
    "LocalSource",
    "Location",
    "Reading",
    "SourceBase",
    "archive_kinds",
    "is_url",
    "open_source",
    "read_entries",
    "read_entries_async",
    "read_only",
    "register_archive",
    "resolve",
    "resolve_output",
    "url_to_fs",
    "writer_of",
]

register_archive(ZIP)

#: The resolver's earlier name, kept for code that imported it.
open_source = resolve
