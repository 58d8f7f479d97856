"""Sources of bootstrap files, the registry of archive kinds, and :func:`resolve`.

:func:`resolve` (in :mod:`.resolve`) is the one place a location becomes a source; which kind of
bundle a file is, is decided by :mod:`.registry`. A built-in archive kind is registered below,
one line each: a new one is a module plus a line here.
"""

from __future__ import annotations

from toolnexus.sources.base import (
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
from toolnexus.sources.bundle import ZIP, BundleSource
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.http import HttpSource
from toolnexus.sources.layered import LayeredSource
from toolnexus.sources.local import LocalSource
from toolnexus.sources.mapping import DictSource
from toolnexus.sources.registry import (
    ArchiveFile,
    ArchiveKind,
    archive_kinds,
    register_archive,
    register_filesystem_source,
)
from toolnexus.sources.resolve import Location, is_url, resolve, resolve_output, url_to_fs
from toolnexus.sources.tar import TAR, TarSource

__all__ = [
    "ArchiveFile",
    "ArchiveKind",
    "BootstrapSource",
    "BundleSource",
    "DictSource",
    "Entry",
    "EntrySourceBase",
    "FsspecSource",
    "HttpSource",
    "LayeredSource",
    "LocalSource",
    "Location",
    "Reading",
    "SourceBase",
    "TarSource",
    "archive_kinds",
    "is_url",
    "open_source",
    "read_entries",
    "read_entries_async",
    "read_only",
    "register_archive",
    "register_filesystem_source",
    "resolve",
    "resolve_output",
    "url_to_fs",
    "writer_of",
]

register_archive(ZIP)
register_archive(TAR)
register_filesystem_source(("http", "https"), HttpSource)

#: The resolver's earlier name, kept for code that imported it.
open_source = resolve
