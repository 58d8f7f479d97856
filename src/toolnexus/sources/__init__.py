"""Sources of bootstrap files, the registry of archive kinds, and :func:`resolve`.

:func:`resolve` (in :mod:`.resolve`) is the one place a location becomes a source; which kind of
bundle a file is, is decided by :mod:`.registry`. Each built-in archive kind and each backend
(the protocol table: which source reads, writes and revalidates homes on a protocol, and which
extra installs it) is registered below, one line each: a new one is a module plus a line here.
"""

from __future__ import annotations

from toolnexus.sources.azure import AzureSource
from toolnexus.sources.base import (
    BootstrapSource,
    Entry,
    EntrySourceBase,
    Reading,
    SourceBase,
    by_content,
    cache_key,
    changed_since,
    changed_since_async,
    read_entries,
    read_entries_async,
    read_folder,
    read_only,
    read_prefixes,
    writer_of,
)
from toolnexus.sources.bundle import ZIP, BundleSource
from toolnexus.sources.children import Child, Pages
from toolnexus.sources.freshness import NOT_MODIFIED, Changes, FreshFile, NotModified, Validators
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.gcs import GcsSource
from toolnexus.sources.http import HttpSource
from toolnexus.sources.in_memory import InMemorySource
from toolnexus.sources.layered import LayeredSource
from toolnexus.sources.local import LocalSource
from toolnexus.sources.mapping import DictSource
from toolnexus.sources.registry import (
    ArchiveFile,
    ArchiveKind,
    Backend,
    archive_kinds,
    backend,
    backends,
    kind_by_name,
    register_archive,
    register_filesystem_source,
)
from toolnexus.sources.resolve import Location, is_url, resolve, resolve_output, url_to_fs
from toolnexus.sources.s3 import S3Source, S3ZipBundle
from toolnexus.sources.tar import TAR, TarSource

__all__ = [
    "NOT_MODIFIED",
    "ArchiveFile",
    "ArchiveKind",
    "AzureSource",
    "Backend",
    "BootstrapSource",
    "BundleSource",
    "Changes",
    "Child",
    "DictSource",
    "Entry",
    "EntrySourceBase",
    "FreshFile",
    "FsspecSource",
    "GcsSource",
    "HttpSource",
    "InMemorySource",
    "LayeredSource",
    "LocalSource",
    "Location",
    "NotModified",
    "Pages",
    "Reading",
    "S3Source",
    "S3ZipBundle",
    "SourceBase",
    "TarSource",
    "Validators",
    "archive_kinds",
    "backend",
    "backends",
    "by_content",
    "cache_key",
    "changed_since",
    "changed_since_async",
    "is_url",
    "kind_by_name",
    "open_source",
    "read_entries",
    "read_entries_async",
    "read_folder",
    "read_only",
    "read_prefixes",
    "register_archive",
    "register_filesystem_source",
    "resolve",
    "resolve_output",
    "url_to_fs",
    "writer_of",
]

register_archive(ZIP)
register_archive(TAR)
register_filesystem_source(("s3", "s3a"), S3Source, extra="s3")
register_filesystem_source(("gs", "gcs"), GcsSource, extra="gcs")
register_filesystem_source(("az", "abfs", "abfss"), AzureSource, extra="azure")
register_filesystem_source(("http", "https"), HttpSource, extra="http")
register_filesystem_source(("memory",), InMemorySource)

#: The resolver's earlier name, kept for code that imported it.
open_source = resolve
