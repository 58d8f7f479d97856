"""Finding a persona's skills: ``skills/<name>/SKILL.md`` and ``.agents/skills/<name>/SKILL.md``
in every layer of its home, then in shared roots, read through the library's own sources.

Each root is one ``read_folder`` of its source that reads only ``<name>/SKILL.md`` (its first
16 KiB: the frontmatter): on an object store, one listing, then one ranged GET per skill, all in
flight. A skill's body and files are read only when it is activated.
Nothing here knows a backend: a folder, an S3 prefix, a zip or tar bundle and ``memory://`` are
whatever :func:`toolnexus.sources.resolve` makes of them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from toolnexus.errors import BootstrapError
from toolnexus.skills.frontmatter import MAX_FRONTMATTER_BYTES, parse_skill_md
from toolnexus.sources import (
    DEFAULT_ENGINE,
    Reading,
    SourceBase,
    is_url,
    kind_by_name,
    resolve,
)

__all__ = ["HOME_FOLDERS", "MAX_SKILLS_PER_ROOT", "Files", "Skill", "discover"]

#: Where a home keeps its skills, the first winning when both hold a name.
HOME_FOLDERS = ("skills", ".agents/skills")
#: Skills taken from one root (a layer, a shared root); the rest are ignored with a warning.
MAX_SKILLS_PER_ROOT = 200

#: A skill's files (paths relative to its folder) → ``(first ≤ limit + 1 bytes, size or None)``;
#: given a path, that file alone (a resource read on demand).
Files = Callable[[int, str | None], Mapping[str, tuple[bytes, int | None]]]


@dataclass(frozen=True)
class Skill:
    """One skill as its SKILL.md's frontmatter describes it; ``location`` is where that SKILL.md
    is, ``origin`` the layer or root it came from, ``warnings`` what validation found."""

    name: str
    description: str
    location: str
    origin: str
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()
    disable_model_invocation: bool = False
    warnings: tuple[str, ...] = ()
    files: Files = field(default=lambda limit, only: {}, repr=False, compare=False)


def skill_from(
    data: bytes, folder: str, location: str, origin: str, files: Files
) -> tuple[Skill | None, list[str]]:
    """The skill a SKILL.md's head describes, or ``None`` (skipped); warnings name the file."""
    parsed = parse_skill_md(data, folder)
    warnings = [f"{location}: {warning}" for warning in parsed.warnings]
    if parsed.fields is None:
        return None, warnings
    fields = parsed.fields
    skill = Skill(
        name=fields["name"],
        description=fields["description"],
        location=location,
        origin=origin,
        license=fields.get("license"),
        compatibility=fields.get("compatibility"),
        metadata=fields.get("metadata", {}),
        allowed_tools=fields.get("allowed-tools", ()),
        disable_model_invocation=fields.get("disable-model-invocation") is True,
        warnings=tuple(warnings),
        files=files,
    )
    return skill, warnings


def is_skill_md(path: str) -> bool:
    """``<name>/SKILL.md``, one folder level below a root: the only file discovery reads."""
    name, _, file = path.partition("/")
    return bool(name) and file == "SKILL.md"


#: Reads one root's SKILL.md heads: ``(where the home turned out to be, {path in the home: head})``.
Heads = Callable[[SourceBase, str], tuple[str, Mapping[str, bytes]]]


def read_heads(source: SourceBase, folder: str) -> tuple[str, dict[str, bytes]]:
    """Every ``<folder>/<name>/SKILL.md``'s first 16 KiB, nothing else: one ``read_folder``."""
    reading: Reading = source.read_folder(folder, MAX_FRONTMATTER_BYTES, match=is_skill_md)
    return reading.location, {path: e.data for path, e in reading.entries.items() if e.data is not None}


def _in_folder(
    source: SourceBase, folder: str, origin: str, heads_of: Heads = read_heads
) -> tuple[list[Skill], list[str]]:
    """The skills ``<folder>/<name>/SKILL.md`` of one source (``folder=""``: its root)."""
    try:
        location, read = heads_of(source, folder)
    except FileNotFoundError:
        raise  # no such home: the caller's mistake, as for compose_soul
    except (OSError, BootstrapError) as error:  # a folder that is a symlink, a denied listing
        return [], [f"{origin}: {folder or 'the root'} not read ({error})"]
    base = f"{folder}/" if folder else ""
    heads = {}
    for path, data in read.items():
        parts = path[len(base) :].split("/")
        if len(parts) == 2 and parts[1] == "SKILL.md":
            heads[parts[0]] = data
    skills: list[Skill] = []
    warnings: list[str] = []
    names = sorted(heads)
    if len(names) > MAX_SKILLS_PER_ROOT:
        warnings.append(
            f"{location}: {len(names)} skills in {folder or 'the root'}; "
            f"the first {MAX_SKILLS_PER_ROOT} by name are read, {len(names) - MAX_SKILLS_PER_ROOT} ignored"
        )
    for name in names[:MAX_SKILLS_PER_ROOT]:
        where = f"{base}{name}"
        files = _folder_files(source, where)
        skill, found = skill_from(
            heads[name], name, f"{location.rstrip('/')}/{where}/SKILL.md", origin, files
        )
        warnings += found
        if skill is not None:
            skills.append(skill)
    return skills, warnings


def _folder_files(source: SourceBase, where: str) -> Files:
    def files(limit: int, only: str | None) -> dict[str, tuple[bytes, int | None]]:
        match = None if only is None else only.__eq__
        entries = source.read_folder(where, limit, match=match).entries
        prefix = f"{where}/"
        return {
            path.removeprefix(prefix): (entry.data, entry.size)
            for path, entry in entries.items()
            if entry.data is not None
        }

    return files


def _home_roots(source: SourceBase) -> list[SourceBase]:
    """A layered home's layers, base first (duck-typed: no source class is named up here)."""
    layers = getattr(source, "layers", None)
    return list(layers) if isinstance(layers, tuple | list) else [source]


def _shared_root(
    root: Any, options: Mapping[str, Any] | None, fs: Any, engine: str
) -> tuple[SourceBase, str]:
    """A shared root as ``(source, folder)``: a bundle is read from its root, a folder or prefix
    as the last component of its parent."""
    if hasattr(root, "fs") and hasattr(root, "path") and not isinstance(root, str):  # a UPath
        return resolve(root.parent, engine=engine), str(root.name)
    text = os.fspath(root) if isinstance(root, os.PathLike) else root
    if not isinstance(text, str):
        return resolve(root), ""  # a source object: its root holds the skills
    url = is_url(text)
    kind = kind_by_name(text.split("::", 1)[-1])
    if "::" in text or kind is not None:
        location = text if "::" in text else f"{kind.protocol}://::{text}"  # type: ignore[union-attr]
        return resolve(location, storage_options=options if url else None, engine=engine), ""
    text = text.rstrip("/") if url else os.path.abspath(text)
    parent, _, name = text.rpartition("/")
    if url and parent.endswith(":/"):
        parent += "/"  # a bucket's root: s3://bucket/skills has the parent s3://bucket/
    return resolve(parent or "/", storage_options=options if url else None, fs=fs, engine=engine), name


def discover(
    location: Any,
    extra: Iterable[Any],
    storage_options: Mapping[str, Any] | None,
    fs: Any,
    *,
    engine: str = DEFAULT_ENGINE,
    fetch: Callable[[str], tuple[list[Skill], list[str]]] | None = None,
    heads_of: Heads = read_heads,
) -> tuple[list[Skill], list[str]]:
    """Every skill of a home and its shared roots, the first found winning per name (the home's
    top layer first, then lower layers, then each ``extra`` root in order), and the warnings.
    ``heads_of`` reads the home's roots (a cache's revalidation: :mod:`.revalidation`)."""
    options = storage_options if is_url(location) or not extra else None  # the extras' options
    # Sized for every SKILL.md of a folder in flight (s3fs keeps 10 connections otherwise).
    source = resolve(location, storage_options=options, fs=fs, engine=engine, reads=MAX_SKILLS_PER_ROOT)
    reads: list[Callable[[], tuple[list[Skill], list[str]]]] = [
        functools.partial(_in_folder, layer, folder, layer.location, heads_of)
        for layer in reversed(_home_roots(source))
        for folder in HOME_FOLDERS
    ]
    for root in extra:
        if isinstance(root, str) and root.startswith(("https://", "http://")) and "::" not in root and fetch:
            reads.append(functools.partial(fetch, root))
            continue
        shared, folder = _shared_root(root, storage_options, fs, engine)
        origin = f"{shared.location.rstrip('/')}/{folder}".rstrip("/")
        reads.append(functools.partial(_in_folder, shared, folder, origin))
    if len(reads) == len(HOME_FOLDERS) * len(_home_roots(source)) and not _waits(source):
        return _first_wins([read() for read in reads])  # local disk or memory: threads cost more
    # Every root at once (a listing each on object stores), so remote roots cost about one wait.
    with ThreadPoolExecutor(min(len(reads), 8), thread_name_prefix="toolnexus-skills") as pool:
        groups = list(pool.map(lambda read: read(), reads))
    return _first_wins(groups)


def _waits(source: SourceBase) -> bool:
    """Whether reading a home waits on a network: a layer with a filesystem (as ``audit`` tells)."""
    return any(getattr(layer, "fs", None) is not None for layer in _home_roots(source))


def _first_wins(groups: Sequence[tuple[list[Skill], list[str]]]) -> tuple[list[Skill], list[str]]:
    chosen: dict[str, Skill] = {}
    warnings: list[str] = []
    for skills, found in groups:
        warnings += found
        for skill in skills:
            chosen.setdefault(skill.name, skill)
    return [chosen[name] for name in sorted(chosen)], warnings
