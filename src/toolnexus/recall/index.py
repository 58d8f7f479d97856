"""``memory_index``: search over a persona's memory — MEMORY.md, USER.md, topic and daily files.

SQLite FTS5 BM25 over line-aligned chunks (:mod:`.chunking`), a bonus for query words in the file
name, optional vectors from an ``embed`` callable merged with BM25 (0.7 vector, 0.3 keyword), then
recency for dated notes (applied after the minimum relevance, so an old only answer is never
hidden), the newest note first on the same matter, and MMR. The index is a cache *outside* the
home (an SQLite file under the user's cache folder, or ``:memory:``): each search revalidates the
home (a local folder by stats, another given a listing by ETags: 304s, no bodies; else it reads it
through its source) and re-indexes only the files whose content changed, inside one write
transaction, so another process's edit is found by the next search and processes may share the
file. A file that is not an index of ours, or is damaged, is rebuilt, never trusted. Nothing here
writes to the home.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, tzinfo
from pathlib import Path
from typing import Any, NamedTuple

from toolnexus._fs import local_files, stat_validator
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.recall.chunking import WORD, chunks
from toolnexus.recall.daily import Clock, Today
from toolnexus.sources import DEFAULT_ENGINE, NotModified, SourceBase, resolve
from toolnexus.sources.local import RACY_SECONDS, LocalSource

__all__ = ["Embed", "Hit", "MemoryIndex", "memory_index", "memory_path"]

MAX_GET_CHARS, DEFAULT_GET_LINES, DEFAULT_RESULTS = 12_000, 120, 6
HALF_LIFE_DAYS, MIN_SCORE, LAMBDA = 30.0, 0.35, 0.7
VECTOR_WEIGHT, NAME_BONUS, SNIPPET_CHARS = 0.7, 0.2, 700
#: The best BM25 matches a search considers (before the name bonus, recency and MMR).
CANDIDATES = 500
#: Texts in, one vector per text out (any length, the same for every call).
Embed = Callable[[list[str]], Sequence[Sequence[float]]]

_FORMAT = "toolnexus-recall-3"
#: The wall clock file timestamps are compared with (a seam for benchmarks that age files).
_now = time.time
_DATED = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})(?:-[^/]*)?\.md$")
_TOP_FILES = ("MEMORY.md", "USER.md")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS recall_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS recall_files (
    path TEXT PRIMARY KEY, digest TEXT NOT NULL, text TEXT NOT NULL, validator TEXT);
CREATE TABLE IF NOT EXISTS recall_chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL,
    body TEXT NOT NULL, words TEXT NOT NULL, vector TEXT);
CREATE INDEX IF NOT EXISTS recall_chunks_path ON recall_chunks (path);
CREATE VIRTUAL TABLE IF NOT EXISTS recall_text USING fts5(body, tokenize='porter unicode61');
"""


@dataclass(frozen=True)
class Hit:
    """One search result: where it is (``path`` in the home, 1-based inclusive lines) and why."""

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str


def memory_path(path: str) -> str:
    """A path as the model or a person may write it — ``/memories/x.md`` (the native tool),
    ``x.md`` (the portable ``file``), ``memory/x.md`` — as its path in the home."""
    path = path.strip()
    if path.startswith("/memories"):
        path = path.removeprefix("/memories").strip("/")
        return path if path in _TOP_FILES else f"memory/{path}"
    path = path.strip("/")
    return path if path in _TOP_FILES or path.startswith("memory/") else f"memory/{path}"


def default_index_path(source: SourceBase, embedder: str) -> Path:
    """Where an index is kept: ``$XDG_CACHE_HOME`` (or ``~/.cache``)``/toolnexus/recall/``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha256(repr((source.cache_key, embedder)).encode()).hexdigest()[:24]
    return Path(base) / "toolnexus" / "recall" / f"{key}.sqlite"


def _embedder_name(embed: Embed | None) -> str:
    if embed is None:
        return "keywords"
    return str(getattr(embed, "recall_name", None) or getattr(embed, "__qualname__", type(embed).__name__))


class MemoryIndex:
    """The index of one home; build it with :func:`memory_index`. Thread-safe; ``close()`` it
    (or use ``with``) to release the SQLite file."""

    def __init__(
        self,
        source: SourceBase,
        *,
        today: Callable[[], date],
        embed: Embed | None,
        index_path: str | os.PathLike[str],
        cache_fallback: bool = False,
        lister: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        #: The memory files' paths without their bodies (see :meth:`current`), if known.
        self.lister, self._validating = lister, True
        #: ``(PRAGMA data_version, {path: validator})`` as last read (see :meth:`_validators`).
        self._known: tuple[int, dict[str, str | None]] | None = None
        #: The raw stats known to equal those validators (cleared with them).
        self._confirmed: dict[str, tuple[int, ...]] = {}
        self.source, self.today, self.embed = source, today, embed
        #: Whether an unusable index file means an index in memory instead (the default path).
        self.cache_fallback = cache_fallback
        self.embedder = _embedder_name(embed)
        self.index_path = str(index_path)
        self._lock = threading.Lock()
        self.db = self._open()

    # -- the cache file -------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self.index_path == ":memory:":
            return self._connect(check=False)
        try:
            Path(self.index_path).parent.mkdir(parents=True, exist_ok=True)
            try:
                return self._connect(check=True)
            except sqlite3.OperationalError:
                raise  # busy or unreachable: never a reason to delete a shared index
            except sqlite3.DatabaseError:
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(self.index_path + suffix).unlink(missing_ok=True)  # rebuilt, never trusted
            return self._connect(check=False)
        except (OSError, sqlite3.OperationalError):
            if not self.cache_fallback:
                raise
            self.index_path = ":memory:"  # no usable cache folder: an index for this process only
            return self._connect(check=False)

    def _connect(self, *, check: bool) -> sqlite3.Connection:
        db = sqlite3.connect(self.index_path, timeout=30.0, check_same_thread=False, isolation_level=None)
        try:
            if check and db.execute("PRAGMA quick_check").fetchone() != ("ok",):
                raise sqlite3.DatabaseError("damaged")
            if self.index_path != ":memory:":
                db.execute("PRAGMA journal_mode=WAL")
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            if tables and "recall_meta" not in tables:
                raise sqlite3.DatabaseError("not an index of toolnexus")
            db.executescript(_SCHEMA)
            db.execute("BEGIN IMMEDIATE")
            meta = dict(db.execute("SELECT key, value FROM recall_meta").fetchall())
            if meta and meta != {"format": _FORMAT, "embedder": self.embedder}:
                if meta.get("format") != _FORMAT:
                    raise sqlite3.DatabaseError("an index of another format")
                for table in ("recall_files", "recall_chunks", "recall_text"):
                    db.execute(f"DELETE FROM {table}")  # another embedder's vectors: start over
            db.executemany(
                "INSERT OR REPLACE INTO recall_meta VALUES (?, ?)",
                [("format", _FORMAT), ("embedder", self.embedder)],
            )
            db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- keeping it current ---------------------------------------------------------------------

    def read_home(self) -> dict[str, str]:
        """``{path in the home: text}`` of every memory file, as the home holds them now."""
        found = dict(self.source.read_entries(_TOP_FILES, MAX_BOOTSTRAP_FILE_BYTES).entries)
        found.update(self.source.read_folder("memory", MAX_BOOTSTRAP_FILE_BYTES).entries)
        return {
            path: entry.data.decode("utf-8-sig", "replace")
            for path, entry in sorted(found.items())
            if entry.data is not None and path.endswith(".md")
        }

    def current(self) -> tuple[set[str], dict[str, str], dict[str, str]]:
        """What the home holds now: every memory file's path, the texts of those that may have
        changed since the index last saw them (all of them when nothing can tell), and the
        validators that prove them next time.

        A local folder is revalidated by stats (one walk, no reads), a file younger than
        :data:`RACY_SECONDS` re-read each time. With a ``lister`` (the memory tool's listing, no
        bodies), another home is revalidated by the source's ``changed_since``: on an object
        store, conditional GETs, 304 for each unchanged file. A source that cannot tell for
        files below ``memory/`` is read whole from then on."""
        if isinstance(self.source, LocalSource) and os.path.isdir(self.source.root):
            return self._by_stats(self.source)
        if self.lister is None or not self._validating:
            home = self.read_home()
            return set(home), home, {}
        listed = sorted({*_TOP_FILES, *(path for path in self.lister() if path.endswith(".md"))})
        stored = self._validators()
        since = _Since({path: tag for path, tag in stored.items() if tag is not None})
        changes = self.source.changed_since(since, listed, MAX_BOOTSTRAP_FILE_BYTES)
        kept = listed if isinstance(changes, NotModified) else changes.kept
        present = {path for path in kept if stored.get(path) is not None}
        texts: dict[str, str] = {}
        tags = {path: str(stored[path]) for path in present}
        if not isinstance(changes, NotModified):
            for path, fresh in changes.read.items():
                texts[path] = fresh.data.decode("utf-8-sig", "replace")
                present.add(path)
                if isinstance(fresh.validator, str):
                    tags[path] = fresh.validator
        if any(path.startswith("memory/") and path not in present for path in listed):
            self._validating = False  # nested names unseen (or one vanished): read it all
            whole = self.read_home()
            return set(whole), whole, {}
        return present, texts, tags

    def _by_stats(self, source: LocalSource) -> tuple[set[str], dict[str, str], dict[str, str]]:
        """The files whose stat is not the one stored beside their text are read (only those):
        the walk is the one ``read_folder`` makes, so the names are the ones it would read."""
        root, trusted_before_ns = source.root, int((_now() - RACY_SECONDS) * 1e9)
        stored = self._validators()
        confirmed = self._confirmed  # stats already matched with ``stored``: no string to make
        listed, stale = [], dict[str, str | None]()  # every file; those to read, by their new validator
        for path, info in _local_stats(root):
            listed.append(path)
            if info is None:
                stale[path] = None  # the read says what is wrong
                continue
            raw = (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            if confirmed.get(path) == raw and max(raw[3], raw[4]) < trusted_before_ns:
                continue
            tag = _stat_tag(info, trusted_before_ns) if stat.S_ISREG(info.st_mode) else None
            if tag is not None and stored.get(path) == tag:
                confirmed[path] = raw
            else:
                stale[path] = tag
        if not stale:
            return set(listed), {}, {}
        top = [name for name in _TOP_FILES if name in stale]
        found = dict(source.read_entries(top, MAX_BOOTSTRAP_FILE_BYTES).entries) if top else {}
        if len(stale) > len(top):
            wanted = {path.removeprefix("memory/") for path in stale}
            found.update(
                source.read_folder("memory", MAX_BOOTSTRAP_FILE_BYTES, match=wanted.__contains__).entries
            )
        texts = {
            path: entry.data.decode("utf-8-sig", "replace")
            for path, entry in found.items()
            if entry.data is not None and path.endswith(".md")
        }
        present = {path for path in listed if path not in stale or path in texts}
        return present, texts, {path: tag for path, tag in stale.items() if tag is not None}

    def _validators(self) -> dict[str, str | None]:
        """Each indexed file's validator, read again only after another connection's commit."""
        with self._lock:
            version = self.db.execute("PRAGMA data_version").fetchone()[0]
            if self._known is None or self._known[0] != version:
                rows = self.db.execute("SELECT path, validator FROM recall_files").fetchall()
                self._known, self._confirmed = (version, dict(rows)), {}
            return self._known[1]

    def refresh(self) -> None:
        """Re-index what changed since the last refresh, by any process (content digests)."""
        present, current, tags = self.current()
        if not current and present == self._validators().keys():
            return  # nothing read, nothing gone: the rows stand as they are
        digests = {path: _digest(text) for path, text in current.items()}
        with self._lock:
            self._known, self._confirmed = None, {}  # our own writes do not change data_version
            stored = dict(self.db.execute("SELECT path, digest FROM recall_files").fetchall())
            changed = [path for path, digest in digests.items() if stored.get(path) != digest]
            if not changed and set(stored) <= present:
                self._keep_validators(tags, digests)
                return
            rows = [(path, *chunk) for path in changed for chunk in _chunk_rows(current[path])]
            vectors = self._vectors([row[3] for row in rows])
            self.db.execute("BEGIN IMMEDIATE")
            try:
                stored = dict(self.db.execute("SELECT path, digest FROM recall_files").fetchall())
                for path in set(stored) - present | set(changed):
                    self._drop(path)
                for (path, first, last, body, words), vector in zip(rows, vectors, strict=True):
                    cursor = self.db.execute(
                        "INSERT INTO recall_chunks (path, first, last, body, words, vector)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        (path, first, last, body, words, vector),
                    )
                    row = (cursor.lastrowid, body)
                    self.db.execute("INSERT INTO recall_text (rowid, body) VALUES (?, ?)", row)
                self.db.executemany(
                    "INSERT INTO recall_files VALUES (?, ?, ?, ?)",
                    [(path, digests[path], current[path], tags.get(path)) for path in changed],
                )
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self._keep_validators(tags, digests)

    def _keep_validators(self, tags: Mapping[str, str], digests: Mapping[str, str]) -> None:
        """Record the validator of each file read, unless its row changed meanwhile (by its
        digest): a validator is only ever stored beside the text it proves."""
        rows = self.db.execute("SELECT path, validator FROM recall_files").fetchall() if digests else []
        stale = [
            (tag, path, digests[path])
            for path, old in rows
            if path in digests and (tag := tags.get(path)) is not None and tag != old
        ]
        if stale:
            self.db.executemany("UPDATE recall_files SET validator = ? WHERE path = ? AND digest = ?", stale)

    def _drop(self, path: str) -> None:
        ids = [row[0] for row in self.db.execute("SELECT id FROM recall_chunks WHERE path = ?", (path,))]
        self.db.executemany("DELETE FROM recall_text WHERE rowid = ?", [(i,) for i in ids])
        self.db.execute("DELETE FROM recall_chunks WHERE path = ?", (path,))
        self.db.execute("DELETE FROM recall_files WHERE path = ?", (path,))

    def _vectors(self, bodies: list[str]) -> list[str | None]:
        if self.embed is None or not bodies:
            return [None] * len(bodies)
        vectors = list(self.embed(bodies))
        if len(vectors) != len(bodies):
            raise ValueError(f"embed returned {len(vectors)} vectors for {len(bodies)} texts")
        return [json.dumps([float(x) for x in vector]) for vector in vectors]

    # -- asking it ------------------------------------------------------------------------------

    def search(self, query: str, k: int = DEFAULT_RESULTS) -> list[Hit]:
        """The ``k`` best chunks for ``query``, best first (``[]`` when nothing is relevant)."""
        self.refresh()
        words = [w.lower() for w in WORD.findall(query)]
        if not words or k < 1:
            return []
        today = self.today()
        with self._lock:
            self.db.execute("BEGIN")  # one snapshot: the bodies fetched below are the chunks scored
            try:
                return self._ranked(query, words, k, today)
            finally:
                self.db.execute("COMMIT")

    def _ranked(self, query: str, words: list[str], k: int, today: date) -> list[Hit]:
        relevance, chunks = self._keyword(words)
        if self.embed is not None:
            similarity, more = self._semantic(query)
            chunks.update(more)
            relevance = {
                i: VECTOR_WEIGHT * similarity.get(i, 0.0) + (1 - VECTOR_WEIGHT) * relevance.get(i, 0.0)
                for i in chunks
            }
        scored = []
        for chunk_id, (path, first, last, body, tokens) in chunks.items():
            score = relevance[chunk_id] + NAME_BONUS * sum(w in path.lower() for w in words) / len(words)
            if score < MIN_SCORE:
                continue
            day = _day(path)
            if day is not None:
                score *= 0.5 + 0.5 * math.pow(0.5, max((today - day).days, 0) / HALF_LIFE_DAYS)
            scored.append((round(score, 6), path, body, first, last, tokens))
        scored.sort(key=lambda row: (-row[0], row[1], row[3]))
        best = scored[: k * 10]  # MMR among the best: the rest could not be picked anyway
        rows, matters = _newest_first(best, set(words))
        picked = _mmr(rows, k)
        for matter in {matters[i] for i in picked} - {None}:  # MMR's trade-off never puts an older note first
            slots = [n for n, i in enumerate(picked) if matters[i] == matter]
            newest = sorted((picked[n] for n in slots), key=lambda i: rows[i][1], reverse=True)
            for n, i in zip(slots, newest, strict=True):
                picked[n] = i
        return [
            Hit(path, first, last, round(score, 4), body[:SNIPPET_CHARS])
            for score, path, body, first, last, _ in (rows[i] for i in picked)
        ]

    def _keyword(self, words: list[str]) -> tuple[dict[int, float], dict[int, _Chunk]]:
        """The best BM25 matches' relevance (1 for the best) and their chunks, by chunk id."""
        match = " OR ".join(f'"{w}"' for w in words)
        found = self.db.execute(
            f"SELECT {_CHUNK}, bm25(recall_text) FROM recall_text JOIN recall_chunks c"
            " ON c.id = recall_text.rowid WHERE recall_text MATCH ? ORDER BY rank LIMIT ?",
            (match, CANDIDATES),
        ).fetchall()
        best = max((-row[-1] for row in found), default=0.0) or 1.0
        return {row[0]: -row[-1] / best for row in found}, {row[0]: row[1:-1] for row in found}

    def _semantic(self, query: str) -> tuple[dict[int, float], dict[int, _Chunk]]:
        assert self.embed is not None
        wanted = [float(x) for x in self.embed([query])[0]]
        found, chunks = {}, {}
        for row in self.db.execute(f"SELECT {_CHUNK}, vector FROM recall_chunks c WHERE vector IS NOT NULL"):
            found[row[0]], chunks[row[0]] = max(_cosine(wanted, json.loads(row[-1])), 0.0), row[1:-1]
        return found, chunks

    def get(self, path: str, start_line: int = 1, lines: int = DEFAULT_GET_LINES) -> str:
        """Lines ``start_line`` … ``start_line + lines - 1`` of a memory file, at most
        :data:`MAX_GET_CHARS` characters; ``FileNotFoundError`` for a file that is not there."""
        self.refresh()
        wanted = memory_path(path)
        with self._lock:
            row = self.db.execute("SELECT text FROM recall_files WHERE path = ?", (wanted,)).fetchone()
        if row is None:
            raise FileNotFoundError(f"{wanted}: no such memory file")
        first = max(start_line, 1) - 1
        return "\n".join(str(row[0]).splitlines()[first : first + max(lines, 0)])[:MAX_GET_CHARS]

    def paths(self) -> list[str]:
        """Every indexed file, as of the last refresh."""
        with self._lock:
            return [row[0] for row in self.db.execute("SELECT path FROM recall_files ORDER BY path")]

    def __repr__(self) -> str:
        return f"MemoryIndex({self.source.location!r}, index_path={self.index_path!r})"


class _Since(NamedTuple):
    """The validators a refresh asks the source about (see ``sources.freshness.Validators``)."""

    validators: Mapping[str, Hashable | None]
    tag: Hashable | None = None


def _local_stats(root: str) -> Iterator[tuple[str, os.stat_result | None]]:
    """Each memory file of a local home and its stat (``None``: it cannot be had), no symlink:
    the files ``read_entries`` and ``read_folder`` read."""
    for name in _TOP_FILES:
        try:
            info = os.stat(os.path.join(root, name), follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError:
            info = None
        yield name, info
    for path, dir_fd, name in local_files(root, "memory"):
        if path.endswith(".md"):
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield path, info


def _stat_tag(info: os.stat_result, trusted_before_ns: int) -> str | None:
    tag = stat_validator(info, trusted_before_ns)
    return None if tag is None else f"stat:{tag!r}"


#: A chunk's path, line range, body and words (each line's, lowercased; the lines by ``\n``).
_Chunk = tuple[str, int, int, str, str]
_CHUNK = "c.id, c.path, c.first, c.last, c.body, c.words"
#: A candidate: its score, path, body, line range and each line's words.
_Scored = tuple[float, str, str, int, int, str]


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _chunk_rows(text: str) -> list[tuple[int, int, str, str]]:
    lines = text.splitlines()
    words = [" ".join(WORD.findall(line.lower())) for line in lines]
    return [
        (c.start, c.end, "\n".join(lines[c.start - 1 : c.end]), "\n".join(words[c.start - 1 : c.end]))
        for c in chunks(text)
    ]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


@functools.lru_cache(maxsize=4096)
def _day(path: str) -> date | None:
    """The day of a dated note (``memory/2026-11-30.md``, ``-slug`` too), else ``None``."""
    dated = _DATED.search(path)
    try:
        return date.fromisoformat(dated.group(1)) if dated else None
    except ValueError:
        return None


def _newest_first(
    scored: list[_Scored], words: set[str]
) -> tuple[list[_Scored], list[frozenset[str] | None]]:
    """Of the dated notes with a line holding the most query words any line holds (the same
    words), a newer one ranks at least as high as an older one, and above it: the newer note on
    the matter supersedes the older however old both are (recency flattens after a few months).
    Each one's matter (those words) is returned beside it; ``None`` for the others."""
    days = [_day(row[1]) for row in scored]
    covers = [_line_cover(row[5], words) for row in scored]
    most = max(map(len, covers), default=0)
    matters = [
        cover if day is not None and len(cover) == most > 0 else None
        for cover, day in zip(covers, days, strict=True)
    ]
    lifted = []
    for i, row in enumerate(scored):
        score, day = row[0], days[i]
        if matters[i] is not None and day is not None:
            for j, other in enumerate(scored):
                older = days[j]
                if older is not None and older < day and matters[j] == matters[i]:
                    score = max(score, other[0])
        lifted.append(score)
    ordinal = [day.toordinal() if day else 0 for day in days]
    order = sorted(range(len(scored)), key=lambda i: (-lifted[i], -ordinal[i], scored[i][1], scored[i][3]))
    return [(lifted[i], *scored[i][1:]) for i in order], [matters[i] for i in order]


def _line_cover(lines: str, words: set[str]) -> frozenset[str]:
    """The most query words one line holds (``lines``: each line's words): what a note says
    about the matter, not words that happen to share its day."""
    most: set[str] = max((words.intersection(line.split()) for line in lines.split("\n")), key=len)
    return frozenset(most)


def _mmr(scored: list[_Scored], k: int) -> list[int]:
    """Maximal marginal relevance: each pick trades relevance against likeness to those picked.
    The scores descend, so a round ends where relevance alone cannot win, and a likeness is
    worked out only for the candidates a round reaches."""
    sets: dict[int, set[str]] = {}
    like = [0.0] * len(scored)  # each one's likeness to the closest pick it was compared with
    compared = [0] * len(scored)  # how many of the picks that was
    picked: list[int] = []
    while len(picked) < min(k, len(scored)):
        choice, best = -1, -math.inf
        for i, row in enumerate(scored):
            if LAMBDA * row[0] <= best:
                break
            if i in picked:
                continue
            if i not in sets:
                sets[i] = set(row[5].split())
            mine = sets[i]
            for chosen in (sets[p] for p in picked[compared[i] :]):
                shared = len(mine & chosen)
                like[i] = max(like[i], shared / ((len(mine) + len(chosen) - shared) or 1))
            compared[i] = len(picked)
            if (value := LAMBDA * row[0] - (1 - LAMBDA) * like[i]) > best:
                choice, best = i, value
        picked.append(choice)
    return picked


def memory_index(
    home: Any,
    *,
    today: date | None = None,
    clock: Clock | None = None,
    timezone: str | tzinfo | None = None,
    embed: Embed | None = None,
    index_path: str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    engine: str = DEFAULT_ENGINE,
) -> MemoryIndex:
    """An index over MEMORY.md, USER.md and every ``memory/*.md`` file of ``home`` — any location
    ``compose_soul`` reads, bundles and read-only homes included. ``today`` (or ``clock`` and
    ``timezone``, default UTC) dates recency; ``embed`` adds vectors (nothing is downloaded by
    toolnexus: the callable is yours); ``index_path`` is the SQLite cache (``":memory:"`` for
    none on disk; default under ``$XDG_CACHE_HOME/toolnexus/recall``, or in memory when that
    folder cannot be used)."""
    source = resolve(home, storage_options=storage_options, fs=fs, engine=engine)
    day: Callable[[], date] = (lambda: today) if today is not None else Today(clock, timezone)
    path = index_path if index_path is not None else default_index_path(source, _embedder_name(embed))
    return MemoryIndex(source, today=day, embed=embed, index_path=path, cache_fallback=index_path is None)
