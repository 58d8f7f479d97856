"""Agent Skills (agentskills.io) in a persona's home: found on every backend the soul is read
from, listed for the model as a bounded catalog, loaded on demand through the ``skill`` tool.

The soul stays exactly the specification's: skills are read beside it, never inside it.

>>> from toolnexus.agents import load_skills
>>> skills = load_skills("examples/aster")  # doctest: +SKIP
>>> print(skills.prompt())  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toolnexus.errors import BootstrapError
from toolnexus.skills.catalog import MAX_RESOURCE_BYTES, MAX_SKILL_MD_BYTES, SkillSet, SkillTool
from toolnexus.skills.discovery import HOME_FOLDERS, MAX_SKILLS_PER_ROOT, Skill, discover
from toolnexus.skills.wellknown import well_known_skills
from toolnexus.sources import DEFAULT_ENGINE, SourceBase

__all__ = [
    "HOME_FOLDERS",
    "MAX_RESOURCE_BYTES",
    "MAX_SKILLS_PER_ROOT",
    "MAX_SKILL_MD_BYTES",
    "Skill",
    "SkillSet",
    "SkillTool",
    "load_skills",
    "skills_beside",
]


def load_skills(
    location: Any,
    *,
    extra: Iterable[Any] = (),
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    engine: str = DEFAULT_ENGINE,
) -> SkillSet:
    """The skills of the home at ``location`` (any location ``compose_soul`` accepts; in a
    layered home the topmost layer wins per name), then of each shared root in ``extra``: a
    folder, prefix or bundle whose children are skills, or an ``https://`` origin publishing
    ``/.well-known/agent-skills/index.json``. Problems are ``warnings``, never errors: a skill
    that cannot be listed is skipped; only a home that cannot be read at all raises."""
    skills, warnings = discover(
        location, tuple(extra), storage_options, fs, engine=engine, fetch=well_known_skills
    )
    return SkillSet(tuple(skills), tuple(warnings))


def skills_beside(source: SourceBase) -> SkillSet:
    """A resolved home's skills for a report (``inspect_soul``, ``audit``): a home whose skills
    cannot be listed gives a warning, never the report's error (its soul was read)."""
    try:
        return load_skills(source)
    except (OSError, BootstrapError) as error:
        return SkillSet((), (f"{source.location}: skills not read ({error})",))
