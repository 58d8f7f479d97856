"""Search over a persona's memory: a keyword index kept outside the home.

SQLite FTS5 BM25 over line-aligned chunks, a bonus for query words in the file name, recency for
dated notes (applied after the relevance floor, so an old only answer is never hidden) and MMR.
The files are read through :func:`~toolnexus.memory.memory_tool`, so every backend it opens works.
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from toolnexus.memory.portable import memory_tool

__all__ = ["Hit", "MemoryIndex", "memory_index"]

CHUNK_WORDS, OVERLAP_WORDS, MAX_GET_CHARS = 300, 60, 12_000  # ~400 and ~80 tokens
HALF_LIFE_DAYS, MIN_SCORE, LAMBDA = 30.0, 0.35, 0.7
_DATED = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})(?:-[^/]*)?\.md$")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str


def chunks(text: str) -> list[tuple[int, int]]:
    """Line ranges (1-based, inclusive) of ~CHUNK_WORDS words, overlapping by ~OVERLAP_WORDS."""
    lines = text.splitlines()
    found, start = [], 0
    while start < len(lines):
        end, words = start, 0
        while end < len(lines) and (words < CHUNK_WORDS or end == start):
            words += len(_WORD.findall(lines[end]))
            end += 1
        found.append((start + 1, end))
        if end >= len(lines):
            break
        back, words = end, 0
        while back > start + 1 and words < OVERLAP_WORDS:
            back -= 1
            words += len(_WORD.findall(lines[back]))
        start = back
    return found


class MemoryIndex:
    def __init__(self, files: dict[str, str], today: date) -> None:
        self.files, self.today = files, today
        self.db = sqlite3.connect(":memory:")  # never in the home
        self.db.execute(
            "CREATE VIRTUAL TABLE c USING fts5(path, body, first UNINDEXED, last UNINDEXED,"
            " tokenize='porter unicode61')"
        )
        for path, text in files.items():
            lines = text.splitlines()
            for first, last in chunks(text):
                body = "\n".join(lines[first - 1 : last])
                self.db.execute("INSERT INTO c VALUES (?, ?, ?, ?)", (path, body, first, last))

    def search(self, query: str, k: int = 6) -> list[Hit]:
        words = [w.lower() for w in _WORD.findall(query)]
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        rows = self.db.execute(
            "SELECT path, body, first, last, bm25(c, 0.0, 1.0) FROM c WHERE c MATCH ?", (f"body: ({match})",)
        ).fetchall()
        if not rows:
            return []
        best = max(-row[4] for row in rows) or 1.0
        scored = []
        for path, body, first, last, rank in rows:
            relevance = -rank / best + 0.2 * sum(w in path.lower() for w in words) / len(words)
            if relevance < MIN_SCORE:
                continue
            dated = _DATED.search(path)
            if dated:
                age = max((self.today - date.fromisoformat(dated.group(1))).days, 0)
                relevance *= 0.5 + 0.5 * math.pow(0.5, age / HALF_LIFE_DAYS)
            scored.append((relevance, path, body, first, last))
        return _mmr(scored, k)

    def get(self, path: str, start_line: int = 1, lines: int = 120) -> str:
        text = self.files.get(path.removeprefix("/memories/"))
        if text is None:
            raise FileNotFoundError(path)
        window = "\n".join(text.splitlines()[max(start_line, 1) - 1 : max(start_line, 1) - 1 + lines])
        return window[:MAX_GET_CHARS]


def _mmr(scored: list[tuple[float, str, str, int, int]], k: int) -> list[Hit]:
    """Maximal marginal relevance: each pick trades relevance against likeness to those picked."""
    sets = [set(_WORD.findall(row[2].lower())) for row in scored]
    picked: list[int] = []
    left = list(range(len(scored)))
    while left and len(picked) < k:

        def value(i: int) -> float:
            like = max((len(sets[i] & sets[j]) / (len(sets[i] | sets[j]) or 1) for j in picked), default=0.0)
            return LAMBDA * scored[i][0] - (1 - LAMBDA) * like

        choice = max(left, key=value)
        picked.append(choice)
        left.remove(choice)
    hits = []
    for i in picked:
        score, path, body, first, last = scored[i]
        hits.append(Hit(path, first, last, round(score, 4), body[:700]))
    return hits


def memory_index(home: Any, *, today: date | None = None, **options: Any) -> MemoryIndex:
    """An index over MEMORY.md, USER.md and every ``memory/*.md`` file of ``home``."""
    tool = memory_tool(home, **options)
    files = {name: (store.read() or b"").decode("utf-8", "replace") for name, store in tool.stores.items()}
    topics = tool.native.topics
    for relative in topics.snapshot().files:
        files[f"memory/{relative}"] = (topics.store(relative).read() or b"").decode("utf-8", "replace")
    return MemoryIndex(files, today or datetime.now(UTC).date())
