"""SoulCache: repeat compositions without giving up freshness. Every call asks the source's
:meth:`~toolnexus.sources.SourceBase.changed_since` with the validators it answered last time
(opaque here: each backend's proof is its own); files it kept keep their decoded sections."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, NamedTuple

from toolnexus.composer.budget import Budget, checked_budget, select_names
from toolnexus.composer.fitting import fitted_sections
from toolnexus.composer.parts import SECTION_SEPARATOR
from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose
from toolnexus.skills import SkillSet
from toolnexus.skills.revalidation import SkillsMemo
from toolnexus.sources import DEFAULT_ENGINE, Changes, NotModified, SourceBase, resolve

logger = logging.getLogger("toolnexus.agents")


class Snapshot(NamedTuple):
    """One persona as last validated: each present file's validator and section, the soul."""

    location: str
    tag: Hashable | None
    validators: Mapping[str, Hashable | None]
    sections: Mapping[str, str]
    soul: str
    found: tuple[str, ...]


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
        sizes = {} if fresh.size is None else {name: fresh.size}
        sections[name] = compose(answer.location, {name: fresh.data}, sizes=sizes)[0]
    found = tuple(name for name in BOOTSTRAP_ORDER if name in sections)
    if old is not None and old.found == found and all(old.sections[n] is sections[n] for n in found):
        soul = old.soul
    else:
        soul = SECTION_SEPARATOR.join(sections[name] for name in found)
    return Snapshot(answer.location, answer.tag, validators, sections, soul, found)


#: Personas kept by default: each holds its decoded sections (~20 KiB typically, at most 7 times 2 MiB).
DEFAULT_MAX_PERSONAS = 256


@dataclass
class CacheStats:
    """What the cache did: calls served without I/O, revalidated, missed, served stale, evicted."""

    fresh_hits: int = 0
    revalidated: int = 0
    misses: int = 0
    stale_served: int = 0
    evictions: int = 0


@dataclass(slots=True)
class _Held:
    """A snapshot, when the store last ``confirmed`` it, and its soul ``fitted`` to ``budget`` once."""

    snapshot: Snapshot
    confirmed: float
    budget: Budget | None = None
    fitted: tuple[str, list[str]] | None = None

    def serve(self) -> tuple[str, list[str]]:
        snapshot = self.snapshot
        if self.budget is None:
            return snapshot.soul, list(snapshot.found)
        if self.fitted is None:
            names = list(snapshot.found)
            sections = [snapshot.sections[name] for name in names]
            bodies = [snapshot.sections[name][len(f"## {name}\n\n") :] for name in names]
            kept, found = fitted_sections(snapshot.location, names, sections, bodies, self.budget)
            self.fitted = (snapshot.soul if kept is sections else SECTION_SEPARATOR.join(kept), found)
        return self.fitted[0], list(self.fitted[1])


class SoulCache:
    """An opt-in cache for :func:`compose_soul` that revalidates on every call: an unchanged local
    file is not read again, an unchanged S3 file costs a bodiless 304. ``max_personas`` bounds memory
    (least recently used dropped); ``max_age`` (seconds, off) serves a soul confirmed that recently
    without a request; ``stale_if_error`` (seconds, off) serves the last good soul, with a warning,
    when the store fails (never one that is gone). Safe across threads and loops; no lock held during I/O.
    """

    def __init__(
        self,
        max_personas: int = DEFAULT_MAX_PERSONAS,
        *,
        max_age: float | None = None,
        stale_if_error: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_personas < 1:
            raise ValueError("max_personas must be at least 1")
        self.max_personas = max_personas
        self.max_age = max_age
        self.stale_if_error = stale_if_error
        self.stats = CacheStats()
        self._clock = clock
        self._held: OrderedDict[Hashable, _Held] = OrderedDict()
        #: Locations already resolved (a source holds nothing that goes stale: each call reads).
        self._sources: dict[Hashable, tuple[SourceBase, Hashable]] = {}
        self._skills: OrderedDict[Hashable, SkillsMemo] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        """Forget every persona."""
        with self._lock:
            self._held.clear()
            self._sources.clear()
            self._skills.clear()

    def compose_soul(
        self,
        dir: str | os.PathLike[str] | Any,
        *,
        storage_options: Mapping[str, Any] | None = None,
        fs: Any = None,
        follow_external_symlinks: bool = False,
        budget: Budget | None = None,
        files: Iterable[str] | None = None,
        profile: str | None = None,
        engine: str = DEFAULT_ENGINE,
    ) -> tuple[str, list[str]]:
        """:func:`compose_soul`, revalidating what this cache holds for ``dir`` (per profile and
        budget: each combination is its own entry; files outside a profile are never read)."""
        names, budget = select_names(files, profile), checked_budget(budget)  # before any I/O
        source, key = self._resolve(dir, storage_options, fs, follow_external_symlinks, engine)
        key, held, served = self._entry(key, names, budget)
        if served is not None:
            return served
        old = None if held is None else held.snapshot
        try:
            answer = source.changed_since(old, names, MAX_BOOTSTRAP_FILE_BYTES)
        except OSError as error:
            return self._failed(key, held, error)
        return self._after(key, old, advance(old, answer), budget)

    async def compose_soul_async(
        self,
        dir: str | os.PathLike[str] | Any,
        *,
        storage_options: Mapping[str, Any] | None = None,
        fs: Any = None,
        follow_external_symlinks: bool = False,
        budget: Budget | None = None,
        files: Iterable[str] | None = None,
        profile: str | None = None,
        engine: str = DEFAULT_ENGINE,
    ) -> tuple[str, list[str]]:
        """:meth:`compose_soul` for event loops: each source decides how it waits."""
        names, budget = select_names(files, profile), checked_budget(budget)  # before any I/O
        source, key = self._resolve(dir, storage_options, fs, follow_external_symlinks, engine)
        key, held, served = self._entry(key, names, budget)
        if served is not None:
            return served
        old = None if held is None else held.snapshot
        try:
            answer = await source.changed_since_async(old, names, MAX_BOOTSTRAP_FILE_BYTES)
        except OSError as error:
            return self._failed(key, held, error)
        return self._after(key, old, advance(old, answer), budget)

    def load_skills(
        self,
        dir: str | os.PathLike[str] | Any,
        *,
        storage_options: Mapping[str, Any] | None = None,
        fs: Any = None,
        follow_external_symlinks: bool = False,
        engine: str = DEFAULT_ENGINE,
    ) -> SkillSet:
        """:func:`load_skills` of the home ``dir`` (no shared roots), each SKILL.md revalidated
        as the soul's files are: listed again, read again only if changed (an S3 home: 304s)."""
        source, key = self._resolve(dir, storage_options, fs, follow_external_symlinks, engine)
        with self._lock:
            memo = self._skills.setdefault(key, SkillsMemo())
            self._skills.move_to_end(key)
            while len(self._skills) > self.max_personas:
                self._skills.popitem(last=False)
        return memo.load(source)

    def _entry(
        self, key: Hashable, names: tuple[str, ...], budget: Budget | None
    ) -> tuple[Hashable, _Held | None, tuple[str, list[str]] | None]:
        """The entry's key (each narrowing is an entry of its own), what it holds, and its soul if
        ``max_age`` lets it be served without a request."""
        if budget is not None or names != BOOTSTRAP_ORDER:
            key = (key, names, budget)
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                self._held.move_to_end(key)
        if held is None or self.max_age is None or self._clock() - held.confirmed >= self.max_age:
            return key, held, None
        self.stats.fresh_hits += 1
        return key, held, held.serve()

    def _resolve(
        self, dir: Any, storage_options: Mapping[str, Any] | None, fs: Any, follow: bool, engine: str
    ) -> tuple[SourceBase, Hashable]:
        """The source and its cache key; an absolute path or URL given alone is resolved once."""
        memo: Hashable | None = None
        if storage_options is None and fs is None and isinstance(dir, str | PurePath):
            text = os.fspath(dir)
            if text.startswith("/") or "://" in text:  # a relative path follows the working folder
                memo = (text, follow, engine)
                known = self._sources.get(memo)
                if known is not None:
                    return known
        options = {"storage_options": storage_options, "fs": fs, "follow_external_symlinks": follow}
        source = resolve(dir, **options, engine=engine)
        resolved = (source, source.cache_key)
        if memo is not None:
            if len(self._sources) >= 2 * self.max_personas:
                self._sources.clear()
            self._sources[memo] = resolved
        return resolved

    def _after(
        self, key: Hashable, old: Snapshot | None, snapshot: Snapshot, budget: Budget | None
    ) -> tuple[str, list[str]]:
        now = self._clock()
        if old is snapshot:  # unchanged: the hot path
            held = self._held.get(key)
            if held is not None and held.snapshot is snapshot:
                held.confirmed = now
                self.stats.revalidated += 1
                return held.serve()
        confirmed = _Held(snapshot, now, budget)
        with self._lock:
            self.stats.misses += old is None
            self.stats.revalidated += old is not None
            self._held[key] = confirmed
            self._held.move_to_end(key)
            while len(self._held) > self.max_personas:
                self._held.popitem(last=False)
                self.stats.evictions += 1
        return confirmed.serve()

    def _failed(self, key: Hashable, held: _Held | None, error: OSError) -> tuple[str, list[str]]:
        """Serve the last good soul if ``stale_if_error`` allows it, loudly; otherwise raise."""
        if isinstance(error, FileNotFoundError | NotADirectoryError):
            with self._lock:
                self._held.pop(key, None)  # the persona is gone: never serve it again
            raise error
        if held is None or self.stale_if_error is None:
            raise error
        age = self._clock() - held.confirmed
        if age > self.stale_if_error:
            raise error
        logger.warning(
            "%s: serving the soul confirmed %.1f s ago (stale_if_error=%s s): the store failed: %s",
            held.snapshot.location,
            age,
            self.stale_if_error,
            error,
        )
        self.stats.stale_served += 1
        return held.serve()
