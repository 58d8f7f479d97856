"""memory_index: keyword search over MEMORY.md, USER.md, topic and daily files."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.homes import Home, make_home
from toolnexus.agents import memory_index, memory_tool
from toolnexus.recall import MAX_GET_CHARS, chunks


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "aster"
    home.mkdir()
    (home / "MEMORY.md").write_text("- Mira prefers tea.\n")
    tool = memory_tool(home)
    tool.tool(command="append", file="projects/aster.md", content="Launch is in March.")
    tool.tool(command="append", file="2026-01-02.md", content="Mira lives in Berlin.")
    tool.tool(command="append", file="2026-11-30.md", content="Mira lives in Hamburg now.")
    tool.tool(command="append", file="2024-05-01.md", content="The espresso machine code is 4471.")
    return home


def test_search_finds_facts_newest_first_and_an_old_only_answer(tmp_path: Path) -> None:
    home = _home(tmp_path)
    before = sorted(p.name for p in home.rglob("*"))
    index = memory_index(home, today=date(2026, 12, 1))
    hits = index.search("where does Mira live")
    assert [hit.path for hit in hits[:2]] == ["memory/2026-11-30.md", "memory/2026-01-02.md"]
    assert (hits[0].start_line, hits[0].end_line) == (1, 1)
    assert "Hamburg" in hits[0].snippet
    assert index.search("espresso code")[0].path == "memory/2024-05-01.md"  # old, but the only answer
    assert index.search("aster launch")[0].path == "memory/projects/aster.md"
    assert index.search("tea")[0].path == "MEMORY.md"
    assert index.search("nothing-like-this") == []
    assert index.get("memory/2026-11-30.md") == "Mira lives in Hamburg now."
    assert sorted(p.name for p in home.rglob("*")) == before  # the index never writes to the home


def test_get_is_bounded(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "MEMORY.md").write_text("x" * 500 + "\n" + ("line\n" * 300))
    index = memory_index(home)
    assert len(index.get("MEMORY.md", lines=1000)) <= MAX_GET_CHARS
    assert index.get("/memories/MEMORY.md", start_line=2, lines=2) == "line\nline"


@given(st.lists(st.text(alphabet="ab \n", max_size=30), max_size=200))
def test_chunks_cover_every_line_in_order(lines: list[str]) -> None:
    text = "\n".join(line.replace("\n", " ") for line in lines)
    ranges = chunks(text)
    count = len(text.splitlines())
    covered = [n for first, last in ranges for n in range(first, last + 1)]
    assert set(covered) == set(range(1, count + 1))
    assert all(first <= last for first, last in ranges)
    assert [first for first, _ in ranges] == sorted({first for first, _ in ranges})


@pytest.mark.parametrize("backend", ["local", "memory", "s3"])
def test_every_backend(backend: str, request: pytest.FixtureRequest) -> None:
    home: Home = make_home(backend, request)
    home.tool().tool(command="append", file="2026-11-30.md", content="Mira lives in Hamburg now.")
    before = home.tree()
    index = memory_index(home.location, **home.options)
    assert index.search("Hamburg")[0].path == "memory/2026-11-30.md"
    assert home.tree() == before
