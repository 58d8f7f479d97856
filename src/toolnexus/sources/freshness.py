"""How a source answers "what changed since the validators you hold?" — the cache's one question.

Like a Jinja loader's ``uptodate``, freshness belongs to the backend: each source knows its
cheapest proof that a file did not change (a local file's stat, an S3 ETag checked with
``If-None-Match``, a bundle's own stat or ETag). The caller (:class:`SoulCache`) keeps what the
source answered last time — a validator per present file and one for the whole home — and
hands it back; it never learns what a validator means. A source that has no cheaper proof uses
:func:`.base.by_content`: read as usual and compare content digests, which is always correct and
saves only the decoding.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple, Protocol

from toolnexus.errors import read_error

__all__ = ["NOT_MODIFIED", "Changes", "FreshFile", "NotModified", "Validators", "conditional_changes"]


class Validators(Protocol):
    """What a caller kept from a source's last answer (SoulCache keeps it in its snapshot)."""

    @property
    def tag(self) -> Hashable | None:
        """The whole home's validator (a folder's stat and listing, a bundle's ETag), if any."""
        ...

    @property
    def validators(self) -> Mapping[str, Hashable | None]:
        """Each present file's validator (``None``: nothing proves that file unchanged)."""
        ...


class NotModified:
    """The answer "nothing changed since those validators" (a 304, for a whole home or one file)."""

    def __repr__(self) -> str:
        return "NOT_MODIFIED"


#: The one :class:`NotModified` instance.
NOT_MODIFIED = NotModified()


class FreshFile(NamedTuple):
    """A file read again: its first ``limit + 1`` bytes, full size when known, new validator."""

    data: bytes
    size: int | None
    validator: Hashable | None


class Changes(NamedTuple):
    """A source's answer when something may have changed.

    ``kept`` names the files whose validator still holds (the caller keeps what it had),
    ``read`` the files read again (new or changed); a name in neither is gone. ``tag`` is the
    home's new validator and ``location`` where the home turned out to be (as in
    :class:`Reading`).
    """

    location: str
    tag: Hashable | None
    kept: tuple[str, ...]
    read: dict[str, FreshFile]


def conditional_changes(
    location: str, names: Sequence[str], answers: Sequence[FreshFile | NotModified | BaseException | None]
) -> Changes | None:
    """What one conditional GET per name (``If-None-Match: <validator>``) said, as
    :class:`Changes`: a 304 keeps the name, a body is read again, ``None`` (a 404) is gone and an
    exception is a failed read of that file. ``None`` when no name was there at all: then only the
    usual read can tell an empty home from a bundle or no home."""
    kept: list[str] = []
    read: dict[str, FreshFile] = {}
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, BaseException):
            raise read_error(answer, location, name) from answer
        if isinstance(answer, NotModified):
            kept.append(name)
        elif answer is not None:
            read[name] = answer
    if not kept and not read:
        return None
    return Changes(location, None, tuple(kept), read)
