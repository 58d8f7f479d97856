"""Exactly once: how a compare-and-swap store tells whether an edit whose answer was lost was applied.

A write's outcome can be unknown: the connection is reset or times out after the body was sent,
or a 5xx comes back although the server stored the object. The SDKs then retry the conditional
write, and when the first attempt *was* applied the retry meets a conflict (412) — which, taken at
its word, would re-apply the edit a second time. So after every conflict or failed write the store
re-reads the object and asks :func:`applied` before doing anything else.

Comparing bytes alone cannot answer that: two writers appending the same note to the same version
write identical bytes, and an edit that was applied and then built upon by another writer is no
longer the stored object. Every conditional write therefore carries a *lineage* in the object's
metadata (``x-amz-meta-toolnexus-edits`` on S3, ``toolnexus_edits`` on Azure Blob,
``toolnexus-edits`` on GCS): a fresh id for this edit, then the ids of the versions before it,
newest first, at most :data:`LINEAGE_LENGTH`. Then, for the object read after the conflict:

- our id in its lineage: the edit was applied (perhaps with other edits on top) — done;
- the id of the version we wrote over in its lineage, but not ours: another writer replaced that
  version first, our conditional write cannot have succeeded — plan again on the fresh bytes;
- no lineage (written by another program, or a server that drops metadata): the bytes decide —
  equal to the bytes we sent means applied (the best anyone can tell);
- a lineage reaching back to neither (over :data:`LINEAGE_LENGTH` writes in between): unknown —
  the edit is not repeated and the caller is told to look before trying again.

A version written without a lineage is named by its version (``=`` + ETag or generation) in the
lineages after it; an absent object by :data:`CREATED`. Deleting an object ends its lineage.
"""

from __future__ import annotations

import re
import secrets
from typing import NamedTuple

__all__ = [
    "AZURE_LINEAGE_KEY",
    "CREATED",
    "LINEAGE_KEY",
    "LINEAGE_LENGTH",
    "Stored",
    "applied",
    "lineage_after",
    "new_edit_id",
    "parse_lineage",
]

#: Ids kept per object: about 600 bytes of metadata (S3 allows 2 KiB), and more writes than any
#: contention test makes while one writer's answer is lost (a 60-second read timeout included).
LINEAGE_LENGTH = 64

#: The lineage's metadata name (on S3 ``x-amz-meta-toolnexus-edits``); Azure's names allow no ``-``.
LINEAGE_KEY, AZURE_LINEAGE_KEY = "toolnexus-edits", "toolnexus_edits"

#: Stands for "no object": the version a creating write replaced.
CREATED = "+"

_UNSAFE = re.compile(r"[^A-Za-z0-9]")


class Stored(NamedTuple):
    """One consistent read of an object: its first cap + 1 bytes (``None``: absent), the version
    of that very object, and the lineage stored with it (``None``: none)."""

    data: bytes | None
    version: str | None
    lineage: tuple[str, ...] | None = None


def new_edit_id() -> str:
    """A fresh id for one edit: 48 random bits in 8 URL-safe characters (never ``+``/``=``)."""
    return secrets.token_urlsafe(6)


def parse_lineage(value: str | None) -> tuple[str, ...] | None:
    """The lineage from its metadata value (ids separated by spaces); ``None`` when absent."""
    ids = tuple(value.split()) if value else ()
    return ids or None


def _identity(stored: Stored) -> str:
    """How lineages after it name this version."""
    if stored.version is None:
        return CREATED
    if stored.lineage:
        return stored.lineage[0]
    return "=" + _UNSAFE.sub("", stored.version)


def lineage_after(stored: Stored, edit: str) -> str:
    """The metadata value for ``edit`` written over ``stored``: its id, then the ids before."""
    before = stored.lineage if stored.lineage else (_identity(stored),)
    return " ".join((edit, *before)[:LINEAGE_LENGTH])


def applied(now: Stored, edit: str, over: Stored, data: bytes) -> bool | None:
    """Whether ``edit`` (``data`` written over ``over``) is in the object as read ``now``:
    ``True`` applied, ``False`` not applied, ``None`` cannot tell (see the module docstring)."""
    if now.lineage is None:
        return now.data == data
    if edit in now.lineage:
        return True
    if _identity(over) in now.lineage:
        return False
    return None
