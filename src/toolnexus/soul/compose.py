"""The public entry points: resolve the location once, read once, compose. The ``*_source``
functions are the same on a resolved source (agents, audit)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from toolnexus.composer.budget import Budget, checked_budget, select_names
from toolnexus.composer.parts import BOOTSTRAP_ORDER, SECTION_SEPARATOR, Soul
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES, SoulReport, compose_report, compose_sections
from toolnexus.skills import skills_beside
from toolnexus.sources import DEFAULT_ENGINE, Entry, Reading, SourceBase, resolve

if TYPE_CHECKING:
    from toolnexus.soul.cache import SoulCache


def _plain(reading: Reading) -> tuple[dict[str, bytes], dict[str, int]]:
    """The bytes and the known sizes of the regular files a read found."""
    entries = reading.entries.items()
    prefixes = {name: entry.data for name, entry in entries if entry.data is not None}
    return prefixes, {
        name: entry.size for name, entry in entries if name in prefixes and entry.size is not None
    }


def _sections(
    read: Mapping[str, bytes] | Reading, location: str, budget: Budget | None
) -> tuple[list[str], list[str]]:
    """No per-file diagnostics: plain bytes (the local hot path) go straight to the composer."""
    if not isinstance(read, Reading):
        return compose_sections(location, read, budget=budget)
    prefixes, sizes = _plain(read)
    over = {name: size for name, size in sizes.items() if size > MAX_BOOTSTRAP_FILE_BYTES}  # named if cut
    return compose_sections(read.location, prefixes, sizes=over, budget=budget)


def _report(
    read: Mapping[str, bytes] | Reading,
    location: str,
    names: tuple[str, ...],
    budget: Budget | None,
    errors: Mapping[str, str] | None = None,
) -> SoulReport:
    if not isinstance(read, Reading):
        return compose_report(location, read, names=names, budget=budget)
    prefixes, sizes = _plain(read)
    entries = read.entries.items()
    return compose_report(
        read.location,
        prefixes,
        sizes=sizes,
        skipped={name: entry.why for name, entry in entries if entry.data is None},
        layers={name: entry.origin for name, entry in entries if entry.origin is not None},
        names=names,
        budget=budget,
        errors=errors,
    )


def compose_soul(
    dir: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    follow_external_symlinks: bool = False,
    cache: SoulCache | None = None,
    budget: Budget | None = None,
    files: Iterable[str] | None = None,
    profile: str | None = None,
    engine: str = DEFAULT_ENGINE,
) -> tuple[str, list[str]]:
    """Compose a persona's soul from its home, wherever it lives; returns ``(soul, found)``.

    ``dir`` is a local path, an fsspec URL (``s3://bucket/aster``, ``zip://aster::s3://b/a.zip``), a
    path on ``fs``, a UPath, a :class:`BootstrapSource`, or a list of them, base first (a layered
    persona: the topmost layer holding a file wins); a zip or tar file is a bundle. ``storage_options``
    configure the filesystem built from a URL (keyed by protocol per hop); ``cache=SoulCache()`` skips
    what provably did not change. ``files=`` or ``profile=`` (see :data:`PROFILES`) reads only those
    names; ``budget=Budget(...)`` fits the soul to a model after the rules; ``engine="obstore"`` reads
    object-store URLs with obstore's client."""
    follow = follow_external_symlinks
    if cache is not None:  # one way to cache: the cache's own method
        options = {"storage_options": storage_options, "fs": fs, "follow_external_symlinks": follow}
        return cache.compose_soul(dir, **options, budget=budget, files=files, profile=profile, engine=engine)
    names, budget = select_names(files, profile), checked_budget(budget)  # before any I/O
    source = resolve(
        dir, storage_options=storage_options, fs=fs, follow_external_symlinks=follow, engine=engine
    )
    sections, found = _sections(source.read_fast(names, MAX_BOOTSTRAP_FILE_BYTES), source.location, budget)
    return SECTION_SEPARATOR.join(sections), found


async def compose_soul_async(
    dir: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    follow_external_symlinks: bool = False,
    cache: SoulCache | None = None,
    budget: Budget | None = None,
    files: Iterable[str] | None = None,
    profile: str | None = None,
    engine: str = DEFAULT_ENGINE,
) -> tuple[str, list[str]]:
    """:func:`compose_soul` for event loops; async filesystems are awaited on their own loop."""
    follow = follow_external_symlinks
    if cache is not None:
        options = {"storage_options": storage_options, "fs": fs, "follow_external_symlinks": follow}
        return await cache.compose_soul_async(
            dir, **options, budget=budget, files=files, profile=profile, engine=engine
        )
    names, budget = select_names(files, profile), checked_budget(budget)  # before any I/O
    source = resolve(
        dir, storage_options=storage_options, fs=fs, follow_external_symlinks=follow, engine=engine
    )
    reading = await source.read_entries_async(names, MAX_BOOTSTRAP_FILE_BYTES)
    sections, found = _sections(reading, source.location, budget)
    return SECTION_SEPARATOR.join(sections), found


def _read_each(
    source: SourceBase, names: tuple[str, ...], failure: OSError
) -> tuple[Reading, dict[str, str]]:
    """After a failed batch read, every name on its own, so one bad file cannot hide the rest;
    when every name fails, the failure is the home's: ``failure`` again."""
    entries: dict[str, Entry] = {}
    errors: dict[str, str] = {}
    location = source.location
    for name in names:
        try:
            reading = source.read_entries((name,), MAX_BOOTSTRAP_FILE_BYTES, exact_sizes=True)
        except OSError as error:
            errors[name] = str(error)
            continue
        location = reading.location
        entries.update(reading.entries)
    if len(errors) == len(names):
        raise failure
    return Reading(location, entries), errors


def inspect_soul(
    dir: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    follow_external_symlinks: bool = False,
    budget: Budget | None = None,
    files: Iterable[str] | None = None,
    profile: str | None = None,
    on_error: Literal["raise", "report"] = "raise",
    engine: str = DEFAULT_ENGINE,
) -> SoulReport:
    """Compose like :func:`compose_soul` and also say what each bootstrap name contributed.

    Sizes over the cap are looked up exactly (maybe one request per oversized remote file); ``skills``
    is the home's :class:`SkillSet` (``None`` with ``files`` or ``profile``). ``on_error="report"``
    makes an unreadable file a row with status ``"error"`` and the soul what the others give; a home
    that cannot be read at all still raises."""
    names, budget = select_names(files, profile), checked_budget(budget)  # before any I/O
    follow = follow_external_symlinks
    source = resolve(
        dir, storage_options=storage_options, fs=fs, follow_external_symlinks=follow, engine=engine
    )
    errors = None
    try:
        read = source.read_fast(names, MAX_BOOTSTRAP_FILE_BYTES, exact_sizes=True)
    except OSError as failure:
        if on_error != "report":
            raise
        read, errors = _read_each(source, names, failure)
    report = _report(read, source.location, names, budget, errors)
    # Skills are the agent's files' (as a session sees them): not a profile's, not named files'.
    if files is not None or profile is not None:
        return report
    return report._replace(skills=skills_beside(source))


def inspect_source(
    source: SourceBase, budget: Budget | None, names: tuple[str, ...], skills: bool
) -> SoulReport:
    """:func:`inspect_soul` on a resolved source, names and budget checked (``audit``, locally)."""
    read = source.read_fast(names, MAX_BOOTSTRAP_FILE_BYTES, exact_sizes=True)
    report = _report(read, source.location, names, budget)
    return report._replace(skills=skills_beside(source)) if skills else report


async def compose_soul_parts_async(
    source: SourceBase,
    *,
    persona: str | None = None,
    budget: Budget | None = None,
    names: tuple[str, ...] = BOOTSTRAP_ORDER,
) -> tuple[Soul, list[str]]:
    """:func:`compose_soul_async` on a resolved source, as a :class:`Soul` that knows its stable
    and volatile parts (an agent's session); split after the budget, so the text is the same."""
    reading = await source.read_entries_async(names, MAX_BOOTSTRAP_FILE_BYTES)
    sections, found = _sections(reading, source.location, budget)
    return Soul.from_sections(zip(found, sections, strict=True), persona=persona), found


async def inspect_source_async(
    source: SourceBase, budget: Budget | None, names: tuple[str, ...], skills: bool
) -> SoulReport:
    """:func:`inspect_source` for event loops (``audit``, remote personas)."""
    reading = await source.read_entries_async(names, MAX_BOOTSTRAP_FILE_BYTES, exact_sizes=True)
    report = _report(reading, source.location, names, budget)
    return report._replace(skills=await asyncio.to_thread(skills_beside, source)) if skills else report
