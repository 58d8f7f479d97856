"""A persona's skills for the model: the bounded ``<available_skills>`` catalog, activation on
demand, and the ``skill`` tool that does it (the neutral tool shape: name, description, JSON
schema, callable). Nothing is ever executed: scripts are listed and readable, never run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from toolnexus._reply import ToolReply
from toolnexus.skills.discovery import Skill
from toolnexus.skills.frontmatter import split_frontmatter

__all__ = ["MAX_RESOURCE_BYTES", "MAX_SKILL_MD_BYTES", "SkillSet", "SkillTool"]

MAX_SKILL_MD_BYTES = 256_000
MAX_RESOURCE_BYTES = 256 * 1024
MAX_RESOURCES = 500
MAX_CATALOG_SKILLS, MAX_CATALOG_CHARS = 150, 18_000
#: The shortest a description is cut to before skills are left out of the catalog instead.
MIN_DESCRIPTION = 40
ALREADY_LOADED = "Already loaded in this conversation: see above."
CUT_NOTICE = "[SKILL.md cut at {cap} bytes]"
INTRO = (
    "## Skills\n\nTo use a skill, call the `skill` tool with its name: it answers the skill's "
    "instructions and lists its files, which `skill` reads with `path`.\n\n"
)


def _entry(skill: Skill, description: str) -> str:
    return (
        f"<skill>\n<name>{escape(skill.name)}</name>\n<description>{escape(description)}</description>\n"
        f"<location>{escape(skill.location)}</location>\n</skill>\n"
    )


def _shorten(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1].rstrip() + "…"


@dataclass(frozen=True)
class SkillSet(Sequence[Skill]):
    """What :func:`load_skills` found: ``skills`` in name order and ``warnings``."""

    skills: tuple[Skill, ...] = ()
    warnings: tuple[str, ...] = ()

    def __getitem__(self, index: Any) -> Any:
        return self.skills[index]

    def __len__(self) -> int:
        return len(self.skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    @property
    def names(self) -> list[str]:
        """Every skill the model may activate (``disable-model-invocation`` ones are not)."""
        return [skill.name for skill in self.skills if not skill.disable_model_invocation]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``toolnexus skills --json``, ``inspect --json``): each skill's name,
        description, location, origin and status, then the warnings."""
        rows = [
            {
                "name": skill.name,
                "description": skill.description,
                "location": skill.location,
                "origin": skill.origin,
                "status": "warning" if skill.warnings else "ok",
            }
            for skill in self.skills
        ]
        return {"skills": rows, "warnings": list(self.warnings)}

    def get(self, name: str) -> Skill:
        for skill in self.skills:
            if skill.name == name:
                return skill
        raise KeyError(f"no skill named {name!r} (skills: {', '.join(self.names) or 'none'})")

    def prompt(self, *, max_skills: int = MAX_CATALOG_SKILLS, max_chars: int = MAX_CATALOG_CHARS) -> str:
        """The catalog for the system prompt (``""`` without skills): descriptions are shortened
        first, then skills are left out (named by a count) until it fits ``max_chars``."""
        listed = [skill for skill in self.skills if not skill.disable_model_invocation]
        if not listed:
            return ""

        def fitting(keep: int, cap: int) -> str | None:
            text = self._render(listed[:keep], cap, len(listed) - keep)
            return text if len(text) <= max_chars else None

        keep = min(len(listed), max_skills)
        if fitting(keep, MIN_DESCRIPTION) is None:  # the most skills that fit at the shortest
            low, high = 0, keep - 1
            while low < high:
                middle = (low + high + 1) // 2
                low, high = (middle, high) if fitting(middle, MIN_DESCRIPTION) else (low, middle - 1)
            keep = low
        best = fitting(keep, MIN_DESCRIPTION) or self._render([], 0, len(listed))
        low, high = MIN_DESCRIPTION + 1, max((len(skill.description) for skill in listed[:keep]), default=0)
        while low <= high:  # then the longest description cap that still fits
            cap = (low + high) // 2
            text = fitting(keep, cap)
            best, low, high = (text, cap + 1, high) if text else (best, low, cap - 1)
        return best

    def _render(self, skills: Sequence[Skill], cap: int, left_out: int) -> str:
        body = "".join(_entry(skill, _shorten(skill.description, cap)) for skill in skills)
        more = (
            f"\n{left_out} more skill{'s are' if left_out > 1 else ' is'} not listed; "
            "`skill` takes any name its input allows."
            if left_out
            else ""
        )
        return f"{INTRO}<available_skills>\n{body}</available_skills>{more}"

    def activate(self, name: str) -> ToolReply:
        """What the ``skill`` tool answers for ``name``: the body (frontmatter stripped) in
        ``<skill_content>`` with the skill's files and their sizes."""
        skill = self._invocable(name)
        if isinstance(skill, ToolReply):
            return skill
        files = _files(skill)
        if isinstance(files, ToolReply):
            return files
        data, size = files.get("SKILL.md", (b"", 0))
        text = data[:MAX_SKILL_MD_BYTES].decode("utf-8", errors="replace")
        split = split_frontmatter(text)
        body = (split[1] if split else text).strip()
        if len(data) > MAX_SKILL_MD_BYTES or (size or 0) > MAX_SKILL_MD_BYTES:
            body += "\n" + CUT_NOTICE.format(cap=MAX_SKILL_MD_BYTES)
        resources = sorted(path for path in files if path != "SKILL.md")
        lines = [f"{path} ({_size(files[path][1])})" for path in resources[:MAX_RESOURCES]]
        if len(resources) > MAX_RESOURCES:
            lines.append(f"… and {len(resources) - MAX_RESOURCES} more files")
        listing = "\n".join(lines)
        return ToolReply(
            f'<skill_content name="{escape(skill.name)}">\n{body}\n\n'
            f"Skill folder: {skill.location.removesuffix('/SKILL.md')}\n"
            f"<skill_resources>\n{listing + chr(10) if listing else ''}</skill_resources>\n</skill_content>"
        )

    def read(self, name: str, path: str) -> ToolReply:
        """One file of a skill, as text (binary and over-large files are refused with their size)."""
        skill = self._invocable(name)
        if isinstance(skill, ToolReply):
            return skill
        clean = path.strip()
        if not clean or clean.startswith(("/", "\\")) or ".." in clean.replace("\\", "/").split("/"):
            return ToolReply(
                f"error: {path!r} is not a path inside the skill (no '..', no absolute paths)", is_error=True
            )
        clean = clean.removeprefix("./")
        files = _files(skill, clean)  # that file alone
        if isinstance(files, ToolReply):
            return files
        if clean not in files:
            return ToolReply(f"error: the skill {name!r} has no file {clean!r}", is_error=True)
        data, size = files[clean]
        if len(data) > MAX_RESOURCE_BYTES or (size or 0) > MAX_RESOURCE_BYTES:
            return ToolReply(
                f"error: {clean} is {_size(size)}, over the {MAX_RESOURCE_BYTES // 1024} KiB a read gives",
                is_error=True,
            )
        try:
            if b"\0" in data:
                raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
            return ToolReply(data.decode("utf-8"))
        except UnicodeDecodeError:
            return ToolReply(
                f"error: {clean} is a binary file ({_size(len(data))}); it cannot be shown as text",
                is_error=True,
            )

    def _invocable(self, name: str) -> Skill | ToolReply:
        for skill in self.skills:
            if skill.name == name and not skill.disable_model_invocation:
                return skill
        available = ", ".join(self.names) or "none"
        return ToolReply(f"error: no skill named {name!r} (skills: {available})", is_error=True)

    def tool(self) -> SkillTool:
        """The ``skill`` tool for one session (it remembers which skills that session loaded)."""
        return SkillTool(self)


def _files(skill: Skill, only: str | None = None) -> Mapping[str, tuple[bytes, int | None]] | ToolReply:
    """The skill's files (or the one named ``only``) as its home holds them now, or the error
    as the tool's answer."""
    try:
        return skill.files(MAX_RESOURCE_BYTES, only)
    except Exception as error:  # the home changed or went away since the catalog was made
        return ToolReply(f"error: the skill {skill.name!r} cannot be read now ({error})", is_error=True)


def _size(size: int | None) -> str:
    if size is None:
        return f"over {MAX_RESOURCE_BYTES // 1024} KiB"
    return f"{size} bytes" if size < 10_240 else f"{size / 1024:.0f} KiB"


class SkillTool:
    """The ``skill`` tool: ``name`` activates a skill once per session; ``name`` and ``path``
    read one of its files."""

    name = "skill"

    def __init__(self, skills: SkillSet) -> None:
        self.skills = skills
        self.loaded: set[str] = set()
        self.description = (
            "Load one of the skills listed under ## Skills in your instructions: answers its "
            "instructions and the files it has. With `path`, answers that file's text instead."
        )

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": self.skills.names, "description": "The skill's name."},
                "path": {"type": "string", "description": "A file of the skill, relative to its folder."},
            },
            "required": ["name"],
            "additionalProperties": False,
        }

    def tool(self, /, **arguments: Any) -> ToolReply:
        name, path = arguments.get("name"), arguments.get("path")
        if not isinstance(name, str):
            return ToolReply("error: pass the skill's name", is_error=True)
        if path:
            return self.skills.read(name, str(path))
        if name in self.loaded:
            return ToolReply(f'<skill_content name="{escape(name)}">\n{ALREADY_LOADED}\n</skill_content>')
        reply = self.skills.activate(name)
        if not reply.is_error:
            self.loaded.add(name)
        return reply

    async def acall(self, /, **arguments: Any) -> ToolReply:
        return await asyncio.to_thread(lambda: self.tool(**arguments))

    def __repr__(self) -> str:
        return f"SkillTool({self.skills.names!r})"
