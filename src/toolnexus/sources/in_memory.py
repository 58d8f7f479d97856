"""Persona homes on fsspec's ``memory://`` filesystem: read and revalidated as on any fsspec
filesystem, written under a lock in this process — which is enough, since no other process
can reach this filesystem.

Registered in ``sources/__init__.py`` for ``memory`` (part of fsspec itself: no extra).
"""

from __future__ import annotations

from toolnexus.sources.fsspec import FsspecSource

__all__ = ["InMemorySource"]


class InMemorySource(FsspecSource):
    """A persona home on ``memory://``: ``InMemorySource(fsspec.filesystem("memory"), "/aster")``."""

    process_local = True
