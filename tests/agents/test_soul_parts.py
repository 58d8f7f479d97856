"""The soul split for prompt caches: ``(text, stable)`` parts whose concatenation is the soul,
taken from the composition's sections (composer/parts.py), through every entry point."""

from __future__ import annotations

import asyncio
import copy
import pickle
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.budgets import BUDGETS, PROFILE_NAMES
from tests.support.budgets import PERSONAS as LONG_PERSONAS
from toolnexus.agents import BOOTSTRAP_ORDER, PROFILES, Budget, compose_soul, inspect_soul
from toolnexus.composer.parts import SECTION_SEPARATOR, STABLE_NAMES, Soul, split_sections
from toolnexus.composer.rules import compose, compose_report, compose_sections
from toolnexus.soul.compose import compose_soul_parts_async
from toolnexus.sources import resolve

#: Pieces of bodies: the headers a text search would split at, and what the rules normalise.
QUOTED = [b"## MEMORY.md", b"\n\n## HEARTBEAT.md\n\n", b"x\n\n## TOOLS.md\n\ny", b"## AGENTS.md\n\n"]
PIECES = st.sampled_from(
    [*QUOTED, b"\r\n", b"\xef\xbb\xbf", "\u00e9".encode(), b"\xff", b"\xff\xfe", b" ", b"a"]
)
BODIES = st.one_of(
    st.text(max_size=30).map(str.encode), st.binary(max_size=30), st.lists(PIECES, max_size=6).map(b"".join)
)
PERSONAS = st.dictionaries(st.sampled_from(BOOTSTRAP_ORDER), BODIES)


def parts_of(persona: dict[str, bytes], cap: int = 24) -> tuple[tuple[str, bool], ...]:
    sections, found = compose_sections("mem", persona, limit=cap)
    return split_sections(zip(found, sections, strict=True))


@settings(max_examples=150)
@given(PERSONAS)
def test_the_parts_concatenate_to_exactly_the_soul(persona: dict[str, bytes]) -> None:
    parts = parts_of(persona)
    soul, found = compose("mem", persona, limit=24)
    assert "".join(text for text, _ in parts) == soul
    assert [stable for _, stable in parts] == sorted({name in STABLE_NAMES for name in found}, reverse=True)
    assert all(text for text, _ in parts)
    assert compose_report("mem", persona, limit=24).parts == parts


@settings(max_examples=100)
@given(PERSONAS)
def test_the_stable_part_is_the_sections_through_tools_md_and_nothing_else(persona: dict[str, bytes]) -> None:
    """Compared with composing the stable files alone: a quoted header never moves the split."""
    stable_only = {name: data for name, data in persona.items() if name in STABLE_NAMES}
    expected = compose("mem", stable_only, limit=24)[0]
    assert Soul(parts_of(persona)).stable == expected


@settings(max_examples=100)
@given(PERSONAS, st.one_of(st.none(), BODIES), st.one_of(st.none(), BODIES))
def test_heartbeat_and_memory_never_change_the_stable_part(
    persona: dict[str, bytes], heartbeat: bytes | None, memory: bytes | None
) -> None:
    edited = {name: data for name, data in persona.items() if name not in ("HEARTBEAT.md", "MEMORY.md")}
    edited |= {
        name: data for name, data in (("HEARTBEAT.md", heartbeat), ("MEMORY.md", memory)) if data is not None
    }
    before, after = Soul(parts_of(persona)), Soul(parts_of(edited))
    assert before.stable == after.stable
    assert after.startswith(after.stable)


@settings(max_examples=100)
@given(LONG_PERSONAS, BUDGETS, PROFILE_NAMES)
def test_the_parts_of_a_budgeted_soul_concatenate_to_it(
    persona: dict[str, bytes], budget: Budget, profile: str | None
) -> None:
    """The split is made over the sections as composed, so it holds for any composed soul: cut
    to a budget (in characters or tokens), files left out, a profile's names only."""
    names = PROFILES[profile] if profile else BOOTSTRAP_ORDER
    chosen = {name: data for name, data in persona.items() if name in names}
    soul, found = compose("mem", chosen, budget=budget)
    sections, found_too = compose_sections("mem", chosen, budget=budget)
    parts = split_sections(zip(found_too, sections, strict=True))
    assert found_too == found
    assert "".join(text for text, _ in parts) == soul
    stable = [section for name, section in zip(found, sections, strict=True) if name in STABLE_NAMES]
    assert Soul(parts).stable == SECTION_SEPARATOR.join(stable)
    report = compose_report("mem", chosen, budget=budget, names=names)
    assert (report.soul, report.parts) == (soul, parts)


def test_the_split_of_a_full_persona(tmp_path: Path) -> None:
    home = tmp_path / "aster"
    home.mkdir()
    for name in BOOTSTRAP_ORDER:
        (home / name).write_text(f"{name} body\n\n## MEMORY.md (quoted)", encoding="utf-8")
    parts = inspect_soul(home).parts
    soul = compose_soul(home)[0]
    (stable, yes), (volatile, no) = parts
    assert (yes, no) == (True, False)
    assert stable + volatile == soul
    assert stable.endswith("## TOOLS.md\n\nTOOLS.md body\n\n## MEMORY.md (quoted)")
    assert volatile.startswith("\n\n## HEARTBEAT.md\n\n")


def test_souls_without_one_kind_of_section() -> None:
    assert split_sections([]) == ()
    assert parts_of({"MEMORY.md": b"m"}) == (("## MEMORY.md\n\nm", False),)
    assert parts_of({"SOUL.md": b"s"}) == (("## SOUL.md\n\ns", True),)
    assert Soul(parts_of({"MEMORY.md": b"m"})).stable == ""
    assert (Soul(), Soul().parts) == ("", ())


def test_an_agent_session_composes_the_same_soul_as_compose_soul(tmp_path: Path) -> None:
    home = tmp_path / "aster"
    home.mkdir()
    for name in ("SOUL.md", "TOOLS.md", "MEMORY.md"):
        (home / name).write_text(f"{name}\r\nbody", encoding="utf-8")
    soul, found = asyncio.run(compose_soul_parts_async(resolve(home), persona="aster"))
    assert (soul, found) == compose_soul(home)
    assert isinstance(soul, Soul)
    assert soul.persona == "aster"
    assert soul.parts == inspect_soul(home).parts


def test_a_soul_is_a_str_that_keeps_its_parts_through_pickle_and_copy() -> None:
    soul = Soul((("## SOUL.md\n\ns", True), ("\n\n## MEMORY.md\n\nm", False)), persona="aster")
    assert soul == "## SOUL.md\n\ns\n\n## MEMORY.md\n\nm"
    assert soul.stable == "## SOUL.md\n\ns"
    for clone in (pickle.loads(pickle.dumps(soul)), copy.deepcopy(soul), copy.copy(soul)):
        assert (clone, clone.parts, clone.persona) == (soul, soul.parts, "aster")
        assert type(clone) is Soul
    assert type(soul + "x") is str  # string operations give plain strings
