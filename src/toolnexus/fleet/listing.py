"""Which personas live under a prefix, one page at a time (each backend's
:meth:`SourceBase.children`): a child folder is a candidate until the audit's read finds no
bootstrap file; files are personas by name only (zip or tar), never sniffed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from toolnexus.composer.budget import Budget
from toolnexus.composer.rules import BOOTSTRAP_ORDER
from toolnexus.sources import Pages, SourceBase, kind_by_name, resolve

__all__ = ["Candidate", "Listing", "Target", "list_prefix", "prefix_path"]

#: ``(path, always)``: where a persona may be, and whether it is one even when nothing is found
#: there (a bundle, the prefix itself) rather than a folder that turned out to hold no bootstrap file.
Candidate = tuple[str, bool]

_BOOTSTRAP_NAMES = frozenset(BOOTSTRAP_ORDER)


@dataclass(frozen=True)
class Target:
    """How a listed path becomes a source, here or on a worker (so it pickles). ``fs`` is the
    listed source's own (``None``: local disk); ``home`` the prefix's source when it is the one
    persona (a bundle)."""

    fs: Any = None
    follow_external_symlinks: bool = False
    budget: Budget | None = None
    names: tuple[str, ...] = BOOTSTRAP_ORDER
    profile: str | None = None
    #: Whether a worker forked from this process can read the personas (obstore's runtime cannot).
    fork_safe: bool = True
    home: SourceBase | None = None

    @property
    def local(self) -> bool:
        """Local disk: read in order, in the calling thread (syscalls, no network to wait on)."""
        return getattr(self.home, "fs", self.fs) is None

    def source(self, path: str) -> SourceBase:
        if self.home is not None:
            return self.home
        return resolve(path, fs=self.fs, follow_external_symlinks=self.follow_external_symlinks)

    def location(self, path: str) -> str:
        """The persona's name in results: its path, as a URL on a remote filesystem."""
        return str(self.fs.unstrip_protocol(path)) if self.fs is not None else path


@dataclass
class Listing:
    """The prefix's location, how its paths are read, and its candidates page by page."""

    location: str
    target: Target
    pages: Iterator[list[Candidate]]


def prefix_path(prefix: Any, fs: Any) -> tuple[Any, str]:
    """``(fs, path)`` of a prefix: a path, a URL, a path on ``fs``, or a UPath (or a source with
    ``fs`` and ``path``), which carries its filesystem and options."""
    if fs is None and not isinstance(prefix, str | os.PathLike) and hasattr(prefix, "fs"):
        fs, prefix = prefix.fs, str(prefix.path)
    path = os.fspath(prefix) if isinstance(prefix, os.PathLike) else prefix
    if not isinstance(path, str):
        raise TypeError(f"expected a prefix path, URL or UPath, not {type(prefix).__name__}")
    if not path:
        raise ValueError("empty prefix: name a folder ('.' for the current one) or a URL")
    return fs, path


def list_prefix(source: SourceBase, path: str, target: Target) -> Listing:
    """Look the prefix up now (a missing one is a :class:`FileNotFoundError` naming it) and list
    it lazily; ``target`` says how its personas are fitted, the listed source how they are read."""
    fs = getattr(source, "fs", None)
    fork_safe = getattr(source, "fork_safe", True) and getattr(fs, "fork_safe", True)
    target = replace(target, fork_safe=bool(fork_safe))
    pages = source.children()
    if pages is None:  # a bundle (or a chained URL naming one): the prefix is the one persona
        return Listing(source.location, replace(target, home=source), iter([[(path, True)]]))
    return Listing(source.location, replace(target, fs=fs), _candidates(pages))


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
