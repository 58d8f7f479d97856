"""How a source answers the cache's one question, "what changed since these validators?"; the proof
is the backend's (a stat, an ETag, a digest)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import NamedTuple, Protocol


class Validators(Protocol):
    @property
    def tag(self) -> Hashable | None:
        """The whole home's validator (a folder's stat and listing, a bundle's ETag), if any."""
        ...

    @property
    def validators(self) -> Mapping[str, Hashable | None]:
        """Each present file's validator (``None``: nothing proves it unchanged)."""
        ...


class NotModified:
    """The answer "nothing changed since those validators" (a 304, for a whole home or one file)."""

    def __repr__(self) -> str:
        return "NOT_MODIFIED"


NOT_MODIFIED = NotModified()


class FreshFile(NamedTuple):
    data: bytes
    size: int | None
    validator: Hashable | None


class Changes(NamedTuple):
    """``kept``: files whose validator holds; ``read``: files read again; a name in neither is
    gone. ``tag`` is the home's new validator, ``location`` where the home turned out to be."""

    location: str
    tag: Hashable | None
    kept: tuple[str, ...]
    read: dict[str, FreshFile]
