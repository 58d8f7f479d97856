"""How the index stays current cheaply: a local home is revalidated by stats, so a search of an
unchanged home reads no file and an edit costs the edited file alone; a file changed within the
timestamps' racy window is read again at each search. And the newest note on a matter first."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

import toolnexus.recall.index as recall_index
from toolnexus.agents import memory_index, memory_tool
from toolnexus.sources.local import RACY_SECONDS


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index's clock a while after the files were written: their stats are trusted."""
    real = time.time
    monkeypatch.setattr(recall_index, "_now", lambda: real() + RACY_SECONDS + 1)


def _reads(index: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the index reads from its home from now on."""
    read: list[str] = []
    source = index.source

    def counted(original: Callable[..., Any]) -> Callable[..., Any]:
        def read_and_count(*args: Any, **kwargs: Any) -> Any:
            found = original(*args, **kwargs)
            read.extend(found.entries)
            return found

        return read_and_count

    for method in ("read_folder", "read_entries"):
        monkeypatch.setattr(source, method, counted(getattr(source, method)))
    return read


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "aster"
    home.mkdir()
    (home / "MEMORY.md").write_text("- Mira prefers tea.\n")
    for day in range(1, 31):
        (home / "memory").mkdir(exist_ok=True)
        (home / "memory" / f"2026-11-{day:02d}.md").write_text(f"Day {day}: walked, read, cooked.\n")
    (home / "memory" / "2026-11-07.md").write_text("The espresso machine code is 4471.\n")
    return home


def test_an_unchanged_home_is_revalidated_by_stats_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, later: None
) -> None:
    home = _home(tmp_path)
    index = memory_index(home, today=date(2026, 12, 1), index_path=tmp_path / "index.sqlite")
    assert index.search("espresso")[0].path == "memory/2026-11-07.md"
    read = _reads(index, monkeypatch)
    assert index.search("espresso code")[0].path == "memory/2026-11-07.md"
    assert read == []  # 31 stats, no file read
    memory_tool(home).tool(command="append", file="2026-11-07.md", content="Mira repaired it.")
    assert "Mira repaired it." in index.search("espresso repaired")[0].snippet  # another writer's edit
    assert read == ["memory/2026-11-07.md"]
    (home / "memory" / "2026-11-07.md").unlink()
    (home / "memory" / "2026-11-08.md").write_text("The kettle is broken.\n")
    read.clear()
    assert index.search("espresso") == []
    assert index.search("kettle")[0].path == "memory/2026-11-08.md"
    assert read == ["memory/2026-11-08.md"]  # the rewritten file, once: its stat is kept beside it
    fresh = memory_index(home, today=date(2026, 12, 1), index_path=":memory:")
    for query in ("espresso", "kettle", "day walked", "mira tea"):
        assert index.search(query) == fresh.search(query)


def test_a_file_changed_just_now_is_read_at_every_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timestamps tick coarsely: a same-size rewrite within a tick keeps the stat, so a file
    younger than the racy window is never trusted by it."""
    home = _home(tmp_path)
    index = memory_index(home, today=date(2026, 12, 1), index_path=":memory:")
    index.search("espresso")
    read = _reads(index, monkeypatch)
    note = home / "memory" / "2026-11-07.md"
    note.write_text(note.read_text().replace("4471", "9000"))  # same size, in place
    assert "9000" in index.search("espresso")[0].snippet
    assert "memory/2026-11-07.md" in read


def test_the_newest_note_on_a_matter_ranks_first_however_old(tmp_path: Path) -> None:
    """Recency fades after a few months; two notes a year apart, both long ago, still rank newest
    first when a line of each holds the query's words, though the older one matches better."""
    home = tmp_path / "aster"
    (home / "memory").mkdir(parents=True)
    (home / "memory" / "2024-01-05.md").write_text("Mira's locker code is 1111.\n")
    filler = "".join(f"- Walked to the market with Jon, errand {n}.\n" for n in range(12))
    (home / "memory" / "2024-09-20.md").write_text(f"{filler}- Update: Mira's locker code changed to 2222.\n")
    (home / "memory" / "2024-10-01.md").write_text("Jon's locker code is 3333.\nMira was away.\n")
    index = memory_index(home, today=date(2026, 12, 1), index_path=":memory:")
    hits = [hit.path for hit in index.search("mira locker code")]
    assert hits.index("memory/2024-09-20.md") < hits.index("memory/2024-01-05.md")
    assert hits[0] == "memory/2024-09-20.md"  # not the newer note whose words are on separate lines
