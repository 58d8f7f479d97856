"""Skills an organisation publishes at ``https://HOST/.well-known/agent-skills/index.json``
(agentskills.io's discovery schema 0.2.0): every artifact is fetched whole, bounded, and used
only when its sha256 matches the index's digest. Archives (zip, tar.gz) are read in place by the
library's own archive readers (from memory: nothing is unpacked to disk, nothing is run).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urljoin

from toolnexus.skills.catalog import MAX_RESOURCE_BYTES
from toolnexus.skills.discovery import MAX_SKILLS_PER_ROOT, Files, Skill, skill_from
from toolnexus.sources import ArchiveFile, kind_by_name, url_to_fs

__all__ = ["INDEX_PATH", "SCHEMA", "well_known_skills"]

INDEX_PATH = "/.well-known/agent-skills/index.json"
SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
MAX_INDEX_BYTES = 1024 * 1024
MAX_SKILL_MD_BYTES = 256_000
#: Largest archive fetched (its members are bounded again by the archive readers).
MAX_ARCHIVE_BYTES = 32 * 1024 * 1024


def _fetch(url: str, cap: int) -> bytes:
    """The whole body of ``url`` (a ``ValueError`` past ``cap``): one streaming GET."""
    fs, path = url_to_fs(url, {})
    with fs.open(path, "rb", block_size=0) as stream:
        data: bytes = stream.read(cap + 1)
    if len(data) > cap:
        raise ValueError(f"over {cap} bytes")
    return data


def well_known_skills(origin: str) -> tuple[list[Skill], list[str]]:
    """The verified skills an origin's index lists, and warnings for everything left out."""
    index_url = urljoin(origin.rstrip("/") + "/", INDEX_PATH.lstrip("/"))
    try:
        index = json.loads(_fetch(index_url, MAX_INDEX_BYTES))
    except Exception as error:
        return [], [f"{index_url}: no skills read ({type(error).__name__}: {error})"]
    if not isinstance(index, dict) or index.get("$schema") != SCHEMA:
        schema = index.get("$schema") if isinstance(index, dict) else None
        return [], [f"{index_url}: unknown $schema {schema!r} (known: {SCHEMA}); the index is not used"]
    entries = [entry for entry in index.get("skills") or [] if isinstance(entry, dict)]
    warnings: list[str] = []
    if len(entries) > MAX_SKILLS_PER_ROOT:
        warnings.append(f"{index_url}: {len(entries)} skills; the first {MAX_SKILLS_PER_ROOT} are read")
    skills: list[Skill] = []
    for entry in entries[:MAX_SKILLS_PER_ROOT]:
        skill, found = _entry(index_url, origin, entry)
        warnings += found
        if skill is not None:
            skills.append(skill)
    return skills, warnings


def _entry(index_url: str, origin: str, entry: dict[str, Any]) -> tuple[Skill | None, list[str]]:
    name, kind, digest = str(entry.get("name", "")), entry.get("type"), str(entry.get("digest", ""))
    url = urljoin(index_url, str(entry.get("url", "")))
    if kind not in {"skill-md", "archive"}:
        return None, [f"{url}: skipped: unknown type {kind!r}"]
    if not name or "/" in name or name.startswith("."):
        return None, [f"{url}: skipped: bad name {name!r}"]
    try:
        data = _fetch(url, MAX_SKILL_MD_BYTES if kind == "skill-md" else MAX_ARCHIVE_BYTES)
    except Exception as error:
        return None, [f"{url}: skipped: {type(error).__name__}: {error}"]
    if digest != f"sha256:{hashlib.sha256(data).hexdigest()}":
        return None, [f"{url}: skipped: its sha256 does not match the index's digest {digest!r}"]
    if kind == "skill-md":
        files: Files = lambda limit, only: {"SKILL.md": (data[: limit + 1], len(data))}  # noqa: E731
        return skill_from(data, name, url, origin, files)
    try:
        members = _archive_members(url, data)
    except Exception as error:
        return None, [f"{url}: skipped: unreadable archive ({error})"]
    if "SKILL.md" not in members:
        return None, [f"{url}: skipped: no SKILL.md at the archive's root"]
    return skill_from(members["SKILL.md"][0], name, f"{url}/SKILL.md", origin, lambda limit, only: members)


def _archive_members(url: str, data: bytes) -> dict[str, tuple[bytes, int | None]]:
    """Every member of an archive held in memory, through the library's readers (the root is
    the skill's folder; ``..``, absolute names, links and bombs are theirs to refuse)."""
    import fsspec  # noqa: PLC0415

    kind = kind_by_name(url.split("?", 1)[0]) or kind_by_name(".zip" if data[:2] == b"PK" else ".tar.gz")
    assert kind is not None
    memory = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    memory.pipe_file("/artifact", data)
    source = kind.open(ArchiveFile("/artifact", url, memory), "")
    entries = source.read_folder("", MAX_RESOURCE_BYTES).entries
    return {path: (entry.data, entry.size) for path, entry in entries.items() if entry.data is not None}
