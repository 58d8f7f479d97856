"""Sources of bootstrap files, and :func:`open_source`: the one place a location becomes a backend.

Dispatch happens once, at the edge. A plain path is the local fast path; a URL goes through
fsspec (chained ``zip://…::…`` URLs are unwrapped so bundles are always read by
:class:`BundleSource`); ``fs=`` and UPath objects carry their own filesystem; a
:class:`BootstrapSource` is used as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .base import BootstrapSource, Entry, EntrySourceBase, Reading, read_entries, read_entries_async
from .bundle import BundleSource
from .fsspec import FsspecSource
from .local import LocalSource

__all__ = [
    "BootstrapSource",
    "BundleSource",
    "Entry",
    "EntrySourceBase",
    "FsspecSource",
    "LocalSource",
    "Location",
    "Reading",
    "open_source",
    "read_entries",
    "read_entries_async",
    "url_to_fs",
]

#: What ``compose_soul`` accepts as a home.
Location = str | os.PathLike[str] | BootstrapSource | Any

#: Extras that provide a protocol's fsspec implementation.
_EXTRAS = {"s3": "s3", "s3a": "s3"}


def open_source(
    location: Location,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    follow_external_symlinks: bool = False,
) -> BootstrapSource:
    """Turn anything ``compose_soul`` accepts into a :class:`BootstrapSource`.

    Raises :class:`TypeError` for an unsupported location or options that cannot apply to it.
    Does no I/O: a location is looked at when it is read.
    """
    # A str is never a source; saying so first skips the runtime-Protocol check, which costs
    # more than composing a small local soul.
    if not isinstance(location, str | os.PathLike) and isinstance(location, BootstrapSource):
        if storage_options or fs is not None or follow_external_symlinks:
            raise TypeError(
                "storage_options, fs and follow_external_symlinks cannot apply to a BootstrapSource; "
                "configure the source itself"
            )
        return location
    if fs is not None:
        if storage_options:
            raise TypeError("pass storage_options or fs=, not both: options are for building a filesystem")
        return _on_filesystem(fs, _as_path(location), follow_external_symlinks)
    if _is_upath(location):
        if storage_options:
            raise TypeError("a UPath carries its own storage options; do not pass storage_options with it")
        upath: Any = location
        return _on_filesystem(upath.fs, str(upath.path), follow_external_symlinks)
    path = _as_path(location)
    if "://" not in path and "::" not in path:
        if storage_options:
            raise TypeError(f"storage_options cannot apply to the local path {path!r}")
        return _local(path, follow_external_symlinks)
    return _from_url(path, dict(storage_options or {}), follow_external_symlinks)


def _as_path(location: Any) -> str:
    if isinstance(location, str):
        return location
    if isinstance(location, os.PathLike):
        path = os.fspath(location)
        if isinstance(path, str):
            return path
    raise TypeError(
        f"expected a path, an fsspec URL, a UPath or a BootstrapSource, not {type(location).__name__}"
    )


def _is_upath(location: Any) -> bool:
    """Duck-typed, so universal_pathlib stays optional."""
    return not isinstance(location, str) and hasattr(location, "fs") and hasattr(location, "path")


def _is_local_fs(fs: Any) -> bool:
    # fsspec is imported on first use so that composing a local home never pays for it.
    from fsspec.implementations.local import LocalFileSystem  # noqa: PLC0415

    return isinstance(fs, LocalFileSystem)


def _on_filesystem(fs: Any, path: str, follow_external_symlinks: bool) -> BootstrapSource:
    if _is_local_fs(fs):
        return _local(fs._strip_protocol(path), follow_external_symlinks)
    return FsspecSource(fs, fs._strip_protocol(path))


def _local(path: str, follow_external_symlinks: bool) -> BootstrapSource:
    """A local home; whether it is a directory or a bundle is found out by reading it."""
    return LocalSource(path, follow_external_symlinks=follow_external_symlinks)


def url_to_fs(url: str, storage_options: dict[str, Any]) -> tuple[Any, str]:
    """fsspec's ``url_to_fs``, with a missing backend reported as the extra to install."""
    import fsspec.core  # noqa: PLC0415  (see _is_local_fs)

    try:
        fs, path = fsspec.core.url_to_fs(url, **storage_options)
    except ImportError as error:
        protocol = url.split("://", 1)[0].rsplit("::", maxsplit=1)[-1]
        extra = _EXTRAS.get(protocol)
        hint = f"pip install 'toolnexus[{extra}]'" if extra else str(error)
        raise ImportError(f"{url}: the {protocol}:// backend is not installed ({hint})") from error
    return fs, str(path)


def _from_url(url: str, storage_options: dict[str, Any], follow_external_symlinks: bool) -> BootstrapSource:
    head, _, rest = url.partition("::")
    if head.startswith("zip://") and rest:
        zip_options = storage_options.pop("zip", None)
        if zip_options:
            raise TypeError("the zip:// hop takes no storage options; key options by the inner protocol")
        archive_fs, archive_path = url_to_fs(rest, storage_options)
        return _bundle_on(archive_fs, archive_path, head.removeprefix("zip://"))
    fs, path = url_to_fs(url, storage_options)
    return _on_filesystem(fs, path, follow_external_symlinks)


def _bundle_on(fs: Any, path: str, folder: str) -> BundleSource:
    """A bundle named by a chained URL; the explicit folder (possibly empty) is the home."""
    if _is_local_fs(fs):
        return BundleSource.from_file(fs._strip_protocol(path), folder or None)
    return BundleSource.from_fs(fs, path, folder or None)
