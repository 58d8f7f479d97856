"""Sources of bootstrap files, the registry of archive kinds and engines, and :func:`resolve`.

:func:`resolve` (in :mod:`.resolve`) is the one place a location becomes a source; which kind of
bundle a file is, is decided by :mod:`.registry`. Each built-in archive kind and each backend
(the protocol table: which source reads, writes and revalidates homes on a protocol, and which
extra installs it) is registered below, one line each: a new one is a module plus a line here.
So is each engine other than fsspec: ``engine="obstore"`` reads the object-store URLs through
obstore's own client (:mod:`.obstore`).
"""

from __future__ import annotations

from functools import partial

from toolnexus.sources.base import (
    BootstrapSource,
    Entry,
    PlainSource,
    Reading,
    SourceBase,
    by_content,
    read_only,
)
from toolnexus.sources.bundle import ZIP, BundleSource
from toolnexus.sources.children import Child, Pages
from toolnexus.sources.freshness import NOT_MODIFIED, Changes, FreshFile, NotModified, Validators
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.http import HttpSource
from toolnexus.sources.layered import LayeredSource
from toolnexus.sources.local import LocalSource
from toolnexus.sources.mapping import DictSource
from toolnexus.sources.obstore import (
    ADAPTER,
    ADAPTER_PROTOCOLS,
    PROTOCOLS,
    STORE_FILES,
    ObstoreFsspecSource,
    ObstoreSource,
    open_filesystem,
    open_output,
    open_url,
)
from toolnexus.sources.registry import (
    DEFAULT_ENGINE,
    ArchiveFile,
    ArchiveKind,
    Backend,
    Engine,
    archive_kinds,
    backend,
    backends,
    engine,
    filesystem_source,
    kind_by_name,
    register_archive,
    register_engine,
    register_filesystem_source,
)
from toolnexus.sources.resolve import Location, is_url, resolve, resolve_output, url_to_fs
from toolnexus.sources.s3 import S3Source
from toolnexus.sources.tar import TAR, TarSource
from toolnexus.stores.fsspec import AzureBlobStore, GcsStore

__all__ = [
    "DEFAULT_ENGINE",
    "NOT_MODIFIED",
    "ArchiveFile",
    "ArchiveKind",
    "Backend",
    "BootstrapSource",
    "BundleSource",
    "Changes",
    "Child",
    "DictSource",
    "Engine",
    "Entry",
    "FreshFile",
    "FsspecSource",
    "HttpSource",
    "LayeredSource",
    "LocalSource",
    "Location",
    "NotModified",
    "ObstoreFsspecSource",
    "ObstoreSource",
    "Pages",
    "PlainSource",
    "Reading",
    "S3Source",
    "SourceBase",
    "TarSource",
    "Validators",
    "archive_kinds",
    "backend",
    "backends",
    "by_content",
    "engine",
    "filesystem_source",
    "is_url",
    "kind_by_name",
    "read_only",
    "register_archive",
    "register_engine",
    "register_filesystem_source",
    "resolve",
    "resolve_output",
    "url_to_fs",
]

register_archive(ZIP)
register_archive(TAR)
register_filesystem_source(("s3", "s3a"), S3Source, extra="s3")
register_filesystem_source(("gs", "gcs"), partial(FsspecSource, conditional_store=GcsStore), extra="gcs")
register_filesystem_source(
    ("az", "abfs", "abfss"), partial(FsspecSource, conditional_store=AzureBlobStore), extra="azure"
)
register_filesystem_source(("http", "https"), HttpSource, extra="http")
register_filesystem_source(("memory",), partial(FsspecSource, process_local=True))
register_filesystem_source(ADAPTER_PROTOCOLS, ObstoreFsspecSource, extra="obstore", implementation=ADAPTER)
register_filesystem_source(("obstore",), ObstoreSource.on_files, extra="obstore", implementation=STORE_FILES)
register_engine(Engine("obstore", tuple(PROTOCOLS), open_url, open_filesystem, open_output, extra="obstore"))
