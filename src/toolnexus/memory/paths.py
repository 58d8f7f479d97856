"""Where a ``/memories`` path lives: ``/memories/MEMORY.md`` and ``/memories/USER.md`` are the home's
own files (in the soul), any other ``/memories/<path>.md`` a *topic file* in ``memory/``, read only
through the tool; and the rules a topic file's name follows, each refusal saying what to do instead."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from toolnexus.recall.daily import daily_day
from toolnexus.stores.base import MEMORY_FILE

ROOT = "/memories"
#: The home's folder holding the topic files.
FOLDER = "memory"
USER_FILE = "USER.md"
#: The files of ``/memories`` that are the home's own bootstrap files (and part of the soul).
SPECIAL_FILES = (MEMORY_FILE, USER_FILE)

MAX_DEPTH = 3
#: Topic files at most; daily notes (``memory/YYYY-MM-DD.md``) do not count.
MAX_FILES = 200
MAX_TOTAL_BYTES = 16 * 1024 * 1024

_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_EXAMPLE = f"{ROOT}/projects/aster.md"


@dataclass(frozen=True, slots=True)
class MemoryPath:
    """A checked ``/memories`` path: as the model wrote it, and its segments below ``/memories``."""

    given: str
    parts: tuple[str, ...]

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def relative(self) -> str:  # below /memories; for a topic file, below memory/ too
        return "/".join(self.parts)

    @property
    def special(self) -> str | None:  # MEMORY.md or USER.md
        return self.parts[0] if len(self.parts) == 1 and self.parts[0] in SPECIAL_FILES else None


def parse(path: str) -> MemoryPath | str:
    """The checked path, or the sentence refusing it (the reference's where it has one)."""
    if not path.startswith(ROOT):
        return f"Path must start with {ROOT}, got: {path}"
    rest = path[len(ROOT) :]
    if rest and not rest.startswith("/"):  # the reference would read /memoriesX as /memories/X
        return (
            f"The path {path} does not exist. Please provide a valid path.\n"
            f"Memory paths look like {_EXAMPLE}."
        )
    if "\\" in path or "\x00" in path:
        return f"Path {path!r} is not allowed: use '/' between names and no control characters."
    parts = tuple(part for part in rest.split("/") if part)
    if "." in parts or ".." in parts:
        depth = 0
        for part in parts:
            depth += -1 if part == ".." else 0 if part == "." else 1
            if depth < 0:
                return f"Path {path} would escape {ROOT} directory"
        return f"Path {path} is not allowed: write it without '.' and '..' segments (e.g. {_EXAMPLE})."
    return MemoryPath(path, parts)


def name_problem(parts: tuple[str, ...]) -> str | None:
    """Why a topic file cannot be created under these segments, or ``None`` when it can."""
    if len(parts) > MAX_DEPTH:
        return f"memory paths are at most {MAX_DEPTH} levels deep (like {ROOT}/projects/2026/aster.md)"
    for part in parts:
        if not _SEGMENT.fullmatch(part):
            return (
                f"{part!r} is not a memory name: use letters, digits, '.', '_' and '-' only, "
                "not starting with '.'"
            )
    if not parts[-1].endswith(".md") or parts[-1] == ".md":
        return f"memory files are markdown: end the name in .md (like {_EXAMPLE})"
    return None


def topic_count(files: Iterable[str]) -> int:
    """How many of ``files`` (paths below ``memory/``) count toward :data:`MAX_FILES`."""
    return sum(daily_day(path) is None for path in files)
