"""The same skills on every backend the library reads: byte-identical catalogs (apart from each
``<location>``) and activations (apart from the skill folder's line)."""

from __future__ import annotations

import pytest

from tests.support.backends import SOURCES, Backends
from toolnexus.agents import DictSource, SkillSet, SoulCache, load_skills

PERSONA = {
    "SOUL.md": b"You are Aster.",
    "skills/pdf-processing/SKILL.md": b"---\nname: pdf-processing\ndescription: PDFs & <tables>.\n---\nBody.",
    "skills/pdf-processing/scripts/extract.py": b"print('text')\n",
    ".agents/skills/review/SKILL.md": b"---\nname: review\ndescription: Review code.\nodd: 1\n---\nReview.\n",
}
#: Backends whose fixture cannot hold nested paths (local: tests/skills/test_skills.py has its
#: own), splits files across layers, or is a plain BootstrapSource (which cannot list: no skills).
SKIPPED = {"local", "layered", "obstore_layered", "custom"}


def without_locations(text: str) -> str:
    return "\n".join(
        line for line in text.splitlines() if not line.startswith(("<location>", "Skill folder:"))
    )


def shape(skills: SkillSet) -> tuple[object, ...]:
    return (
        without_locations(skills.prompt()),
        [without_locations(skills.activate(name)) for name in skills.names],
        skills.read("pdf-processing", "scripts/extract.py"),
        [warning.split(": ", 1)[1] for warning in skills.warnings],
    )


@pytest.mark.parametrize("source", [source for source in SOURCES if source not in SKIPPED])
def test_every_backend_gives_the_same_skills(backends: Backends, source: str) -> None:
    location, kwargs = getattr(backends, source)(PERSONA)
    skills = load_skills(location, **kwargs)
    assert skills.names == ["pdf-processing", "review"]
    assert shape(skills) == shape(load_skills(DictSource(PERSONA)))
    assert skills.warnings[0].endswith(".agents/skills/review/SKILL.md: unknown field odd")
    cache = SoulCache()  # a cache's revalidated skills are the same, first read and again
    assert cache.load_skills(location, **kwargs) == skills
    assert cache.load_skills(location, **kwargs) == skills
