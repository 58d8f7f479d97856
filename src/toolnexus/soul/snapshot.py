"""What :class:`SoulCache` keeps per persona (the source's validators, opaque here, and the
decoded sections), and how a source's answer updates it — pure."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from toolnexus.composer.parts import SECTION_SEPARATOR
from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose
from toolnexus.sources import Changes, NotModified

__all__ = ["Snapshot", "advance"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One persona as last validated: each present file's validator and section, the soul."""

    location: str
    tag: Hashable | None
    validators: Mapping[str, Hashable | None]
    sections: Mapping[str, str]
    soul: str
    found: tuple[str, ...]


def _section(location: str, name: str, data: bytes, size: int | None) -> str:
    sizes = {} if size is None else {name: size}
    return compose(location, {name: data}, limit=MAX_BOOTSTRAP_FILE_BYTES, sizes=sizes)[0]


def advance(old: Snapshot | None, answer: Changes | NotModified) -> Snapshot:
    """The snapshot after a source answered: kept files keep their section (not decoded again),
    files read again are decoded, the rest are gone; the old soul is reused when nothing changed."""
    if isinstance(answer, NotModified):
        if old is None:
            raise TypeError("a source answered NOT_MODIFIED to a first read (since=None)")
        return old
    validators: dict[str, Hashable | None] = {}
    sections: dict[str, str] = {}
    for name in answer.kept:
        if old is None or name not in old.sections:
            raise TypeError(f"{answer.location}: a source kept {name}, which it had not given before")
        validators[name] = old.validators[name]
        sections[name] = old.sections[name]
    for name, fresh in answer.read.items():
        validators[name] = fresh.validator
        sections[name] = _section(answer.location, name, fresh.data, fresh.size)
    found = tuple(name for name in BOOTSTRAP_ORDER if name in sections)
    if old is not None and old.found == found and all(old.sections[n] is sections[n] for n in found):
        soul = old.soul
    else:
        soul = SECTION_SEPARATOR.join(sections[name] for name in found)
    return Snapshot(answer.location, answer.tag, validators, sections, soul, found)
