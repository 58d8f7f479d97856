"""A cache's skills, revalidated with the backend's own proof of freshness, as the soul is.

Each root is listed again (a skill added or removed shows there; nothing is read), then its
SKILL.md heads are asked :meth:`~toolnexus.sources.SourceBase.changed_since` what was held: an
object store answers conditional GETs (a bodiless 304 per unchanged SKILL.md), a bundle its own
validator. A source whose proof does not cover every listed head (a local folder proves its
top-level files only) has that root read again, which on local disk is a few system calls.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import NamedTuple

from toolnexus.skills.catalog import SkillSet
from toolnexus.skills.discovery import discover, is_skill_md, read_heads
from toolnexus.skills.frontmatter import MAX_FRONTMATTER_BYTES
from toolnexus.sources import NotModified, SourceBase

__all__ = ["SkillsMemo"]


class _Known(NamedTuple):
    """One root's heads as last read, and what proves each (a :class:`Validators`)."""

    tag: Hashable | None
    validators: Mapping[str, Hashable | None]
    heads: Mapping[str, bytes]


class SkillsMemo:
    """What a :class:`~toolnexus.SoulCache` holds of one home's skills: each root's heads."""

    def __init__(self) -> None:
        self._roots: dict[Hashable, _Known] = {}

    def load(self, source: SourceBase) -> SkillSet:
        """:func:`~toolnexus.skills.load_skills` of the resolved home, its heads revalidated."""
        skills, warnings = discover(source, (), None, None, heads_of=self.heads)
        return SkillSet(tuple(skills), tuple(warnings))

    def heads(self, source: SourceBase, folder: str) -> tuple[str, dict[str, bytes]]:
        listed: list[str] = []

        def record(path: str) -> bool:
            if is_skill_md(path):
                listed.append(f"{folder}/{path}" if folder else path)
            return False  # listed, never read

        location = source.read_folder(folder, MAX_FRONTMATTER_BYTES, match=record).location
        key = (source.cache_key, folder)
        known = self._roots.get(key)
        heads: dict[str, bytes] = {}
        validators: dict[str, Hashable | None] = {}
        tag: Hashable | None = None
        if listed:
            changes = source.changed_since(known, listed, MAX_FRONTMATTER_BYTES)
            if isinstance(changes, NotModified):
                kept, tag = listed, known.tag if known is not None else None
            else:
                kept, tag = list(changes.kept), changes.tag
                for path, fresh in changes.read.items():
                    heads[path], validators[path] = fresh.data, fresh.validator
            for path in kept:
                if known is not None and path in known.heads:
                    heads[path], validators[path] = known.heads[path], known.validators.get(path)
        if set(heads) != set(listed):  # the proof did not answer for every head: read them
            location, heads = read_heads(source, folder)
            validators, tag = dict.fromkeys(heads), None
        self._roots[key] = _Known(tag, validators, heads)
        return location, heads
