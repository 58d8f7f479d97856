"""memory_index: keyword (and optional vector) search over MEMORY.md, USER.md, topic and daily
files, kept in an SQLite cache outside the home and refreshed from it at every search."""

from __future__ import annotations

import hashlib
import math
import sqlite3
import tempfile
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import fsspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolnexus.recall.index as recall_index
from tests.support.files import zip_bytes
from tests.support.homes import Home, make_home
from toolnexus.agents import memory_index, memory_tool
from toolnexus.recall import MAX_GET_CHARS, chunks
from toolnexus.recall.index import default_index_path
from toolnexus.sources.local import RACY_SECONDS


@pytest.fixture(autouse=True)
def _cache_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default index location is the user's cache folder: here, a scratch one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


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
    assert index.get("/memories/2026-11-30.md") == index.get("2026-11-30.md")  # as either tool names it
    assert sorted(p.name for p in home.rglob("*")) == before  # the index never writes to the home
    assert not Path(index.index_path).is_relative_to(home)


def test_get_is_bounded(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "MEMORY.md").write_text("x" * 500 + "\n" + ("line\n" * 300))
    index = memory_index(home)
    assert len(index.get("MEMORY.md", lines=1000)) <= MAX_GET_CHARS
    assert index.get("/memories/MEMORY.md", start_line=2, lines=2) == "line\nline"
    assert index.get("MEMORY.md").count("\n") == 119  # 120 lines by default
    with pytest.raises(FileNotFoundError):
        index.get("memory/none.md")


_LINES = st.lists(st.text(alphabet="ab \n", max_size=30).map(lambda s: s.replace("\n", " ")), max_size=200)


@given(_LINES, st.booleans())
def test_every_line_is_in_exactly_one_chunks_core(lines: list[str], long: bool) -> None:
    text = "\n".join(("word " * 70 if long and i % 3 == 0 else "") + line for i, line in enumerate(lines))
    found = chunks(text)
    count = len(text.splitlines())
    cores = [n for chunk in found for n in range(chunk.core_start, chunk.core_end + 1)]
    assert sorted(cores) == list(range(1, count + 1))  # every line, once
    for chunk in found:
        assert chunk.start == chunk.core_start <= chunk.core_end <= chunk.end <= count
    assert [chunk.start for chunk in found] == sorted({chunk.start for chunk in found})
    if found:
        assert (found[0].start, found[-1].end) == (1, count)


def test_chunks_are_about_400_tokens_with_overlap() -> None:
    text = "\n".join(f"line {n} " + "word " * 18 for n in range(100))  # 20 words a line
    found = chunks(text)
    assert len(found) > 3
    first, second = found[0], found[1]
    assert 300 <= (first.end - first.start + 1) * 20 <= 320
    assert (first.end - second.start + 1) * 20 == 60  # ~80 tokens shared


# -- after any sequence of edits, the kept index equals a rebuild from scratch ----------------------

_FILES = ["2026-11-29.md", "2026-11-30.md", "projects/aster.md", "people/mira.md"]
_WORDS = ["mira", "hamburg", "berlin", "tea", "launch", "march", "aster", "code"]
_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["append", "replace", "remove", "delete", "memory"]),
        st.sampled_from(_FILES),
        st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join),
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.slow
@settings(max_examples=20)
@given(_EDITS, st.booleans())
def test_the_kept_index_equals_a_rebuild_after_any_edits(
    edits: list[tuple[str, str, str]], later: bool
) -> None:
    """``later``: the index's clock past the racy window, so files are revalidated by their stats."""
    real = recall_index._now
    if later:
        recall_index._now = lambda: real() + RACY_SECONDS + 1
    try:
        _edit_then_compare(edits)
    finally:
        recall_index._now = real


def _edit_then_compare(edits: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "aster"
        home.mkdir()
        tool = memory_tool(home)
        kept = memory_index(home, today=date(2026, 12, 1), index_path=Path(scratch) / "kept.sqlite")
        for command, file, words in edits:
            if command == "memory":
                tool.tool(command="append", content=words)
            elif command == "delete":
                tool.tool(command="delete", path=f"/memories/{file}")
            elif command == "append":
                tool.tool(command="append", file=file, content=words)
            else:
                first = words.split()[0]
                arguments = {"old": first, **({"new": "tea"} if command == "replace" else {})}
                tool.tool(command=command, file=file, **arguments)
            kept.search(words)  # refreshed between edits, as a session would
        fresh = memory_index(home, today=date(2026, 12, 1), index_path=":memory:")
        for query in ("mira hamburg", "launch", *(words for _, _, words in edits)):
            assert kept.search(query) == fresh.search(query)
        fresh.close()
        kept.close()


# -- the cache file ---------------------------------------------------------------------------------


def test_the_index_lives_in_the_cache_folder_and_sees_other_writers(tmp_path: Path) -> None:
    home = _home(tmp_path)
    index = memory_index(home, today=date(2026, 12, 1))
    assert Path(index.index_path) == default_index_path(index.source, "keywords")
    assert Path(index.index_path).exists()
    assert index.search("espresso")[0].path == "memory/2024-05-01.md"
    other = memory_index(home, today=date(2026, 12, 1))  # another process would open the same file
    memory_tool(home).tool(command="replace", file="2024-05-01.md", old="4471", new="9000")
    assert "9000" in index.search("espresso code")[0].snippet  # an edit behind its back, found next search
    assert "9000" in other.search("espresso code")[0].snippet
    (home / "memory" / "2024-05-01.md").unlink()
    assert index.search("espresso") == []


@pytest.mark.parametrize("content", [b"not a database at all" * 100, "foreign"])
def test_a_corrupt_or_foreign_index_file_is_rebuilt(tmp_path: Path, content: bytes | str) -> None:
    home = _home(tmp_path)
    path = tmp_path / "index.sqlite"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE recall_files (path TEXT, digest TEXT, text TEXT)")  # lies
        db.execute("INSERT INTO recall_files VALUES ('MEMORY.md', 'x', 'trusted?')")
        db.commit()
        db.close()
    index = memory_index(home, index_path=path)
    assert index.search("tea")[0].path == "MEMORY.md"
    assert "trusted?" not in index.get("MEMORY.md")


def test_an_unusable_cache_folder_means_an_index_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path)
    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    index = memory_index(home)
    assert index.index_path == ":memory:"
    assert index.search("tea")[0].path == "MEMORY.md"
    with pytest.raises(FileExistsError):
        memory_index(home, index_path=tmp_path / "not-a-folder" / "index.sqlite")  # yours: an error


def test_a_damaged_row_set_is_made_right_by_the_next_search(tmp_path: Path) -> None:
    """The file is checked against the home at each search: rows of ours that lie are replaced."""
    home = _home(tmp_path)
    path = tmp_path / "index.sqlite"
    memory_index(home, index_path=path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE recall_files SET digest = 'stale' WHERE path = 'MEMORY.md'")
    db.commit()
    db.close()
    assert memory_index(home, index_path=path).search("tea")[0].path == "MEMORY.md"


# -- vectors --------------------------------------------------------------------------------------

_CONCEPTS = {"car": 0, "automobile": 0, "vehicle": 0, "dog": 1, "puppy": 1, "hound": 1}


def concept_embed(texts: list[str]) -> Sequence[Sequence[float]]:
    """A tiny deterministic local embedding: synonyms share a dimension, other words hash."""
    vectors = []
    for text in texts:
        vector = [0.0] * 16
        for raw in text.lower().split():
            word = raw.strip(".,")
            slot = _CONCEPTS.get(word, 2 + int(hashlib.sha256(word.encode()).hexdigest(), 16) % 14)
            vector[slot] += 1.0 if word in _CONCEPTS else 0.2
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        vectors.append([x / norm for x in vector])
    return vectors


def test_vectors_find_what_the_keywords_miss(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "MEMORY.md").write_text("- Mira bought an automobile.\n- Mira adopted a puppy.\n")
    calls: list[int] = []

    def embed(texts: list[str]) -> Sequence[Sequence[float]]:
        calls.append(len(texts))
        return concept_embed(texts)

    assert memory_index(home, index_path=":memory:").search("car") == []  # keywords alone: nothing
    hybrid = memory_index(home, embed=embed, index_path=tmp_path / "v.sqlite")
    assert hybrid.search("car")[0].path == "MEMORY.md"
    assert hybrid.search("hound")  # the same chunk; only the vector knows why
    embedded = sum(calls)
    hybrid.search("vehicle")
    assert sum(calls) == embedded + 1  # unchanged files are not embedded again: only the query
    assert memory_index(home, index_path=tmp_path / "v.sqlite").search("car") == []  # another embedder


# -- every backend, read-only homes too -----------------------------------------------------------


@pytest.mark.parametrize("backend", ["local", "memory", "s3"])
def test_every_backend(backend: str, request: pytest.FixtureRequest) -> None:
    home: Home = make_home(backend, request)
    home.tool().tool(command="append", file="2026-11-30.md", content="Mira lives in Hamburg now.")
    before = home.tree()
    index = memory_index(home.location, **home.options)
    assert index.search("Hamburg")[0].path == "memory/2026-11-30.md"
    home.tool().tool(command="append", file="2026-11-30.md", content="She visits Lisbon.")
    assert index.search("Lisbon")[0].end_line == 2
    assert home.tree() != before
    after = home.tree()
    index.search("Mira")
    assert home.tree() == after  # searching never writes to the home


def test_a_bundle_is_searched_though_it_cannot_be_written(tmp_path: Path) -> None:
    bundle = tmp_path / "aster.zip"
    files = {"SOUL.md": b"Aster.", "memory/2026-11-30.md": b"Mira lives in Hamburg now.\n"}
    bundle.write_bytes(zip_bytes(files))
    assert memory_index(bundle).search("Hamburg")[0].path == "memory/2026-11-30.md"


#: The emulators' session fixtures, by the protocol they serve.
EMULATORS = {"az": "azurite", "gs": "fake_gcs_server"}


@pytest.mark.parametrize("protocol", list(EMULATORS))
def test_daily_notes_and_search_on_the_emulators(protocol: str, request: pytest.FixtureRequest) -> None:
    options = request.getfixturevalue(EMULATORS[protocol]).storage_options
    fs = fsspec.filesystem(protocol, skip_instance_cache=True, **options)
    bucket = f"recall-{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]}"
    fs.mkdir(bucket)
    fs.pipe_file(f"{bucket}/aster/SOUL.md", b"Aster.")
    home = f"{protocol}://{bucket}/aster"
    tool = memory_tool(home, storage_options=options, clock=lambda: _NOON)
    assert not tool.tool(command="append", file="today", content="Mira lives in Hamburg now.").is_error
    index = memory_index(home, storage_options=options, today=_NOON.date())
    assert index.search("Hamburg")[0].path == "memory/2026-12-01.md"
    tool.tool(command="str_replace", path="/memories/2026-12-01.md", old_str="Hamburg", new_str="Lisbon")
    assert index.search("Lisbon")[0].snippet == "Mira lives in Lisbon now."
    assert index.search("Hamburg") == []


_NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
