"""Exactly once: whether an edit whose answer was lost (a reset, a timeout, a 5xx after the write)
was applied, which comparing bytes cannot tell for two identical appends. Every conditional write
keeps a *lineage* in the metadata: its edit's id, then the earlier versions' ids, newest first. Read
again: our id there, applied; the id we wrote over but not ours, not; no lineage, the bytes decide."""

from __future__ import annotations

import re
import secrets
from typing import NamedTuple

#: Ids kept per object: about 600 bytes of metadata (S3 allows 2 KiB).
LINEAGE_LENGTH = 64

#: The lineage's metadata name (on S3 ``x-amz-meta-toolnexus-edits``); Azure's names allow no ``-``.
LINEAGE_KEY, AZURE_LINEAGE_KEY = "toolnexus-edits", "toolnexus_edits"

#: Stands for "no object": the version a creating write replaced.
CREATED = "+"

_UNSAFE = re.compile(r"[^A-Za-z0-9]")


class Stored(NamedTuple):
    """One consistent read of an object: its first cap + 1 bytes, its version and its lineage."""

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
    """Whether ``edit`` (``data`` written over ``over``) is in the object read ``now``; ``None``: unknown."""
    if now.lineage is None:
        return now.data == data
    if edit in now.lineage:
        return True
    if _identity(over) in now.lineage:
        return False
    return None
