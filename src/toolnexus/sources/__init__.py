"""Sources of bootstrap files: the surface for new backends, sources and bundle kinds (``__all__``),
and each built-in one registered in a line; names imported with ``as`` are the upper layers' way in."""

from __future__ import annotations

from functools import partial

from toolnexus.sources.base import BootstrapSource, Entry, Reading, SourceBase, read_only
from toolnexus.sources.bundle import ZIP
from toolnexus.sources.bundle import BundleSource as BundleSource
from toolnexus.sources.children import Child
from toolnexus.sources.children import Pages as Pages
from toolnexus.sources.freshness import NOT_MODIFIED, Changes, FreshFile, NotModified, Validators
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.http import HttpSource
from toolnexus.sources.layered import LayeredSource as LayeredSource
from toolnexus.sources.local import LocalSource as LocalSource
from toolnexus.sources.mapping import DictSource as DictSource
from toolnexus.sources.obstore import ADAPTER, ADAPTER_PROTOCOLS, ENGINE, STORE_FILES, ObstoreFsspecSource
from toolnexus.sources.obstore import ObstoreSource as ObstoreSource
from toolnexus.sources.registry import DEFAULT_ENGINE as DEFAULT_ENGINE
from toolnexus.sources.registry import ArchiveFile as ArchiveFile
from toolnexus.sources.registry import (
    ArchiveKind,
    register_archive,
    register_engine,
    register_filesystem_source,
)
from toolnexus.sources.registry import archive_kinds as archive_kinds
from toolnexus.sources.registry import backends as backends
from toolnexus.sources.registry import kind_by_name as kind_by_name
from toolnexus.sources.resolve import Location as Location
from toolnexus.sources.resolve import is_url as is_url
from toolnexus.sources.resolve import resolve as resolve
from toolnexus.sources.resolve import resolve_output as resolve_output
from toolnexus.sources.resolve import url_to_fs as url_to_fs
from toolnexus.sources.s3 import S3Source
from toolnexus.sources.tar import TAR
from toolnexus.stores.fsspec import AzureBlobStore, GcsStore

__all__ = [
    "NOT_MODIFIED",
    "ArchiveKind",
    "BootstrapSource",
    "Changes",
    "Child",
    "Entry",
    "FreshFile",
    "FsspecSource",
    "NotModified",
    "Reading",
    "SourceBase",
    "Validators",
    "read_only",
    "register_archive",
    "register_filesystem_source",
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
register_filesystem_source(("obstore",), ObstoreSource, extra="obstore", implementation=STORE_FILES)
register_engine(ENGINE)
