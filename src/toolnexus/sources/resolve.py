""":func:`resolve`: the one place a location becomes a source. Every entry point calls it once
and hands the source down, so nothing below looks at URLs, ``fs=``, UPaths, options or engines.
Resolving does no I/O, and a plain path does not import fsspec."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from toolnexus.sources.base import BootstrapSource, SourceBase, as_source
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.layered import LayeredSource
from toolnexus.sources.local import LocalSource
from toolnexus.sources.registry import (
    DEFAULT_ENGINE,
    ArchiveFile,
    Engine,
    archive_hop,
    backend,
    filesystem_source,
)
from toolnexus.sources.registry import engine as _engine

#: What ``compose_soul`` accepts as a home.
Location = str | os.PathLike[str] | BootstrapSource | Any


def resolve(
    location: Location,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    follow_external_symlinks: bool = False,
    engine: str = DEFAULT_ENGINE,
    reads: int | None = None,
) -> SourceBase:
    """Anything ``compose_soul`` accepts as its source (a list or tuple: layers, base first);
    ``reads`` sizes a URL's client for that many requests in flight (``audit``)."""
    client = None if engine == DEFAULT_ENGINE else _engine(engine)  # checked before any I/O
    plain = (
        location if type(location) is str else os.fspath(location) if isinstance(location, PurePath) else None
    )
    if plain and fs is None and "://" not in plain and "::" not in plain:
        if storage_options:
            raise TypeError(f"storage_options cannot apply to the local path {plain!r}")
        return LocalSource(plain, follow_external_symlinks=follow_external_symlinks)  # the hot path
    if isinstance(location, list | tuple):
        return _layers(location, storage_options, fs, follow_external_symlinks, engine)
    # A str is never a source: saying so first skips the costly runtime-Protocol check.
    if isinstance(location, SourceBase) or (
        not isinstance(location, str | os.PathLike) and isinstance(location, BootstrapSource)
    ):
        if storage_options or fs is not None or follow_external_symlinks:
            raise TypeError(
                "storage_options, fs and follow_external_symlinks cannot apply to a BootstrapSource; "
                "configure the source itself"
            )
        return as_source(location)
    if fs is not None:
        if storage_options:
            raise TypeError("pass storage_options or fs=, not both: options are for building a filesystem")
        return _on_filesystem(fs, _as_path(location), follow_external_symlinks, client)
    if _is_upath(location):
        if storage_options:
            raise TypeError("a UPath carries its own storage options; do not pass storage_options with it")
        upath: Any = location
        return _on_filesystem(upath.fs, str(upath.path), follow_external_symlinks, client)
    path = _as_path(location)
    if not path:  # "" would silently mean the current folder; "." says so on purpose
        raise ValueError("empty location: name a folder ('.' for the current one), a bundle or a URL")
    if not is_url(path):
        if storage_options:
            raise TypeError(f"storage_options cannot apply to the local path {path!r}")
        return LocalSource(path, follow_external_symlinks=follow_external_symlinks)
    options = dict(storage_options or {})
    if client is not None:
        return client.open_url(path, options)
    if reads is not None:
        options = _sized(path, options, reads)
    return _from_url(path, options, follow_external_symlinks)


def _sized(url: str, options: dict[str, Any], reads: int) -> dict[str, Any]:
    """The options for ``reads`` requests at once, by the backend (s3fs: its pool)."""
    row = backend(url.split("://", 1)[0]) if "::" not in url else None
    sized = getattr(row.source, "concurrent_options", None) if row is not None else None
    return sized(options, reads) if sized is not None else options


def _layers(
    locations: list[Any] | tuple[Any, ...],
    storage_options: Mapping[str, Any] | None,
    fs: Any,
    follow_external_symlinks: bool,
    engine: str,
) -> LayeredSource:
    """Each layer resolved on its own: ``storage_options`` go to the URL layers, ``fs=`` to the
    path layers; sources come configured."""
    if not locations:
        raise ValueError("a layered persona needs at least one layer (got an empty list)")
    if any(isinstance(layer, list | tuple) for layer in locations):
        raise TypeError("layers are locations, not nested lists: pass one flat list, base first")
    if storage_options and fs is None and not is_url(locations):
        raise TypeError("storage_options cannot apply: no layer is a URL")
    layers: list[SourceBase] = []
    for layer in locations:
        if isinstance(layer, str | os.PathLike):
            options = storage_options if fs is None and is_url(layer) else None
            follow = follow_external_symlinks
            layers.append(
                resolve(layer, storage_options=options, fs=fs, follow_external_symlinks=follow, engine=engine)
            )
        else:
            layers.append(resolve(layer))
    return LayeredSource(layers)


def is_url(location: object) -> bool:
    """Whether ``location`` names an fsspec URL, chained or not (for layers: whether any does)."""
    if isinstance(location, list | tuple):
        return any(is_url(layer) for layer in location)
    if isinstance(location, os.PathLike):
        location = os.fspath(location)
    return isinstance(location, str) and ("://" in location or "::" in location)


def resolve_output(
    out: str, storage_options: Mapping[str, Any] | None, engine: str = DEFAULT_ENGINE
) -> tuple[Any, str]:
    """Where a file is written: ``(None, local path)``, or ``(fs, path)`` for a single URL."""
    if "::" in out:
        raise ValueError(f"{out}: a bundle is written to one location, not a chained URL")
    if not is_url(out):
        return None, out
    client = _engine(engine)
    if client is not None:
        return client.open_output(out, dict(storage_options or {}))
    fs, path = url_to_fs(out, dict(storage_options or {}))
    return (None if _is_local_fs(fs) else fs), path


def _as_path(location: Any) -> str:
    if isinstance(location, str):
        return location
    if isinstance(location, os.PathLike):
        path = os.fspath(location)
        if isinstance(path, str):
            return path
    raise TypeError(
        f"expected a path, an fsspec URL, a UPath or a BootstrapSource, not {type(location).__name__} "
        "(a list or tuple of them composes layers)"
    )


def _is_upath(location: Any) -> bool:
    """Duck-typed, so universal_pathlib stays optional."""
    return not isinstance(location, str) and hasattr(location, "fs") and hasattr(location, "path")


def _is_local_fs(fs: Any) -> bool:
    # fsspec is imported on first use so that composing a local home never pays for it.
    from fsspec.implementations.local import LocalFileSystem  # noqa: PLC0415

    return isinstance(fs, LocalFileSystem)


def _on_filesystem(fs: Any, path: str, follow_external_symlinks: bool, client: Engine | None) -> SourceBase:
    if _is_local_fs(fs):
        return LocalSource(fs._strip_protocol(path), follow_external_symlinks=follow_external_symlinks)
    if client is not None:
        return client.open_filesystem(fs, path)
    source = filesystem_source(fs) or FsspecSource
    return source(fs, fs._strip_protocol(path))


def url_to_fs(url: str, storage_options: dict[str, Any]) -> tuple[Any, str]:
    """fsspec's ``url_to_fs``; a missing backend or unknown protocol is an error naming the URL."""
    import fsspec.core  # noqa: PLC0415  (see _is_local_fs)

    protocol = url.split("://", 1)[0].rsplit("::", maxsplit=1)[-1]
    try:
        fs, path = fsspec.core.url_to_fs(url, **storage_options)
    except ImportError as error:
        raise _not_installed(url, protocol, error) from error
    except ValueError as error:
        if "protocol" not in str(error).lower():
            raise
        raise ValueError(f"{url}: unknown protocol {protocol!r} ({error})") from error
    return fs, str(path)


def _not_installed(url: str, innermost: str, error: ImportError) -> ImportError:
    """The error naming the hop whose fsspec implementation is missing, and its extra."""
    import fsspec  # noqa: PLC0415  (see _is_local_fs)

    protocol, cause = innermost, str(error)
    for hop in (part.split("://", 1)[0] for part in url.split("::")):
        try:
            fsspec.get_filesystem_class(hop)
        except ImportError as missing:
            protocol, cause = hop, str(missing)
            break
        except ValueError:
            continue  # not a protocol fsspec knows: not the missing one
    row = backend(protocol)
    hint = row.install_hint if row is not None and row.install_hint else cause
    return ImportError(f"{url}: the {protocol}:// backend is not installed ({hint})")


def _from_url(url: str, storage_options: dict[str, Any], follow_external_symlinks: bool) -> SourceBase:
    hop = archive_hop(url, storage_options)
    if hop is None:
        fs, path = url_to_fs(url, storage_options)
        return _on_filesystem(fs, path, follow_external_symlinks, None)
    kind, folder, rest = hop
    archive_fs, archive_path = url_to_fs(rest, storage_options)
    if _is_local_fs(archive_fs):
        local = os.path.abspath(archive_fs._strip_protocol(archive_path))
        return kind.open(ArchiveFile(local, local), folder)
    archive = (filesystem_source(archive_fs) or FsspecSource)(archive_fs, archive_path)
    if isinstance(archive, FsspecSource):  # its backend may read this kind its own way
        return archive.open_bundle(kind, folder)
    return kind.open(ArchiveFile(archive_path, archive.location, archive_fs), folder)
