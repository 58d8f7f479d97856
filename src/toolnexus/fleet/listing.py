"""Which personas live under a prefix: a streamed listing, one page at a time.

A persona is a direct child folder holding at least one bootstrap file, or a direct child whose
name says zip or tar bundle; the prefix itself is one when it holds a bootstrap file (it is
listed where its first bootstrap file is) or is a bundle. Whether a child folder holds a
bootstrap file is learnt by reading it (the read the audit makes anyway), so listing costs only
the prefix's own listing pages, which each backend lists its own way
(:meth:`~toolnexus.sources.SourceBase.children`: on S3 a page of 1,000 names at a time, locally
one streamed ``scandir``). Files whose name says nothing (``README.md``, ``aster.bin``) are not
personas: an audit does not open every file to sniff it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from toolnexus.composer.budget import Budget
from toolnexus.composer.rules import BOOTSTRAP_ORDER
from toolnexus.soul.arguments import Call
from toolnexus.sources import (
    DEFAULT_ENGINE,
    Pages,
    backend,
    engine,
    filesystem_source,
    is_url,
    kind_by_name,
    resolve,
)

__all__ = ["Candidate", "Listing", "Target", "list_prefix"]

#: ``(path, always)``: where a persona may be, and whether it is one even when nothing is found
#: there (a bundle, the prefix itself) rather than a folder that turned out to hold no bootstrap file.
Candidate = tuple[str, bool]

_BOOTSTRAP_NAMES = frozenset(BOOTSTRAP_ORDER)


@dataclass(frozen=True)
class Target:
    """How a listed path becomes a source — here or on a worker, so it pickles (fsspec
    filesystems are re-created from their arguments; the obstore engine's files from the URL's
    options). ``fs=None``: local paths and chained URLs. ``fs`` is the listed source's own, so a
    child is read by the same backend and engine as its prefix was listed with."""

    fs: Any = None
    storage_options: Mapping[str, Any] | None = None
    follow_external_symlinks: bool = False
    #: The client for object-store URLs (``resolve``'s ``engine``).
    engine: str = DEFAULT_ENGINE
    #: What each persona is fitted to and which of its files are read (as for ``inspect_soul``).
    budget: Budget | None = None
    profile: str | None = None

    @property
    def local(self) -> bool:
        """Local disk: read in order, in the calling thread (syscalls, no network to wait on)."""
        return self.fs is None and not self.storage_options

    @property
    def fork_safe(self) -> bool:
        """Whether a worker process forked from this one can read the personas (a client whose
        threads ``fork()`` does not copy, as obstore's, hangs there)."""
        if self.fs is not None:
            declared = getattr(self.fs, "fork_safe", None)  # the obstore engine's own files say so
            source = filesystem_source(self.fs)  # else the registered source for its class
            return bool(getattr(source, "fork_safe", True) if declared is None else declared)
        client = engine(self.engine)
        return self.local or client is None or client.fork_safe

    @cached_property
    def call(self) -> Call:
        """The same arguments, checked and ready to resolve a path: what ``check`` and
        ``check_async`` read for every persona, built once per target (a worker unpickles its own)."""
        where = (self.storage_options, self.fs, self.follow_external_symlinks, self.engine)
        return Call.checked(where, (self.budget, None, self.profile))

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
    reads: int = 7,
    engine: str = DEFAULT_ENGINE,
) -> Listing:
    """Look the prefix up now (a missing one is a :class:`FileNotFoundError` naming it) and list
    it lazily. ``reads``: requests the audit will have in flight, to size a remote client."""
    if fs is None and not isinstance(prefix, str | os.PathLike) and hasattr(prefix, "fs"):
        fs, prefix = prefix.fs, str(prefix.path)  # a UPath carries its filesystem and options
    path = os.fspath(prefix) if isinstance(prefix, os.PathLike) else prefix
    if not isinstance(path, str):
        raise TypeError(f"expected a prefix path, URL or UPath, not {type(prefix).__name__}")
    if not path:
        raise ValueError("empty prefix: name a folder ('.' for the current one) or a URL")
    url = fs is None and is_url(path)
    options = _sized(path, storage_options, reads, engine) if url else storage_options
    follow = follow_external_symlinks
    source = resolve(path, storage_options=options, fs=fs, follow_external_symlinks=follow, engine=engine)
    children = getattr(source, "children", None)  # a source of your own may not list: one persona
    pages = children() if callable(children) else None
    if pages is None:  # a bundle (or a chained URL naming one): the prefix is the one persona
        return Listing(source.location, Target(fs, options, follow, engine), iter([[(path, True)]]))
    target = Target(getattr(source, "fs", None), None, follow, engine)  # remote sources have one
    return Listing(source.location, target, _candidates(pages))


def _sized(
    url: str, options: Mapping[str, Any] | None, reads: int, engine_name: str
) -> Mapping[str, Any] | None:
    """The client's options for ``reads`` requests at once (s3fs: a connection pool that large):
    the engine's say, or with fsspec the backend's."""
    client = engine(engine_name)
    if client is not None:
        sized = client.concurrent_options
    else:
        row = backend(url.split("://", 1)[0]) if "::" not in url else None
        sized = getattr(row.source, "concurrent_options", None) if row is not None else None
    return sized(options or {}, reads) if sized is not None else options


def _candidates(pages: Pages) -> Iterator[list[Candidate]]:
    """Children → candidates, page by page, in listing order; the prefix itself counts once,
    where its first bootstrap file is listed (its path is that file's folder)."""
    home_seen = False
    for page in pages:
        candidates: list[Candidate] = []
        for child in page:
            if child.folder:
                candidates.append((child.path, False))
            elif child.name in _BOOTSTRAP_NAMES:
                if not home_seen:
                    home_seen = True
                    candidates.append((child.path[: -len(child.name) - 1], True))
            elif kind_by_name(child.name) is not None:
                candidates.append((child.path, True))
        yield candidates
