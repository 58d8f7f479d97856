"""Daily notes: ``memory/YYYY-MM-DD.md`` (or ``memory/YYYY-MM-DD-<slug>.md``), one day's jottings.

They are not part of the soul; a session starts with the last days' notes as a short prelude
after it (:func:`daily_prelude`, pure; :func:`recent_notes` reads them where no memory tool
lists them), each bounded to its most recent lines. "Today" is the
session's clock in the persona's timezone, so a persona in Tokyo writes to tomorrow's UTC note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.sources import SourceBase

__all__ = [
    "DAILY_NOTE",
    "DEFAULT_DAYS",
    "MAX_FILE_CHARS",
    "MAX_TOTAL_CHARS",
    "PRIVATE_PROFILES",
    "Clock",
    "Today",
    "daily_day",
    "daily_prelude",
    "recent_days",
    "recent_notes",
    "today_description",
]

#: A daily note's name directly below ``memory/``.
DAILY_NOTE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:-[A-Za-z0-9_][A-Za-z0-9._-]*)?\.md")
DEFAULT_DAYS, MAX_FILE_CHARS, MAX_TOTAL_CHARS = 2, 1_200, 2_800
PRELUDE_HEADER = "## Daily notes"
#: Session profiles that see no daily prelude and cannot search or read memory (shared channels,
#: delegated and unattended runs): private memory stays private.
PRIVATE_PROFILES = frozenset({"group", "subagent", "cron"})
#: Zero arguments, an aware ``datetime``: what "now" is for a session.
Clock = Callable[[], datetime]


def daily_day(relative: str) -> date | None:
    """The day of a daily note (``relative`` is its path below ``memory/``), else ``None``."""
    match = DAILY_NOTE.fullmatch(relative)
    if match is None:
        return None
    try:
        return date.fromisoformat(match.group(1))
    except ValueError:
        return None  # 2026-13-45.md is a topic file with an odd name


def _now_utc() -> datetime:
    return datetime.now(UTC)


class Today:
    """What day it is for a persona: ``clock`` (default: the system's, in UTC) read in ``timezone``
    (an IANA name such as ``"Europe/Berlin"``, or a ``tzinfo``; default UTC)."""

    def __init__(self, clock: Clock | None = None, timezone: str | tzinfo | None = None) -> None:
        if clock is not None and not callable(clock):
            raise TypeError(f"clock must be a zero-argument callable returning a datetime, not {clock!r}")
        self.clock = clock or _now_utc
        self.timezone: tzinfo = ZoneInfo(timezone) if isinstance(timezone, str) else timezone or UTC

    def __call__(self) -> date:
        now = self.clock()
        if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
            raise ValueError(f"clock() must return an aware datetime (with a timezone), got {now!r}")
        return now.astimezone(self.timezone).date()

    def note(self) -> str:
        """Today's note, below ``memory/``."""
        return f"{self()}.md"


def _tail(text: str, limit: int, name: str) -> str:
    """The most recent lines of ``text`` within ``limit`` characters, marker included."""
    text = text.rstrip("\n")
    if len(text) <= limit:
        return text
    marker = f"[… earlier lines of {name} not shown: view it to read them]"
    kept: list[str] = []
    room = limit - len(marker) - 1
    if room < 0:
        return ""  # not even the marker fits: the note is left out
    for line in reversed(text.splitlines()):
        if len(line) + 1 > room:
            break
        kept.append(line)
        room -= len(line) + 1
    return "\n".join([marker, *reversed(kept)])


def recent_days(today: date, days: int) -> tuple[date, date]:
    """The first and last day of a prelude of ``days`` days ending today."""
    return today - timedelta(days=max(days, 1) - 1), today


def recent_notes(source: SourceBase, today: date, days: int) -> dict[str, str]:
    """The daily notes of a home without the memory tool (a bundle, an HTTP home), by
    ``{path below memory/: text}``: :func:`recent_days`' notes among the ``memory/`` folder."""
    first, last = recent_days(today, days)
    entries = source.read_folder("memory", MAX_BOOTSTRAP_FILE_BYTES).entries
    return {
        relative: (entry.data or b"").decode("utf-8", "replace")
        for path, entry in entries.items()
        if first <= (daily_day(relative := path.removeprefix("memory/")) or date.min) <= last
    }


def today_description(day: str, timezone: str) -> str:
    """The paragraph of the memory tool's description that tells the model today's date and
    where today's note is (``file="today"``, or ``/memories/<day>.md``)."""
    return (
        f"Daily notes: today is {day} ({timezone}). Keep what happened today in today's note, "
        f'memory/{day}.md: append with file "today"; with the built-in commands its path is '
        f"/memories/{day}.md (create it, then insert or str_replace). Daily notes do not count toward "
        "the topic-file limit; the last days' notes are shown at the start of a session."
    )


def daily_prelude(
    notes: Mapping[str, str],
    today: date,
    days: int = DEFAULT_DAYS,
    *,
    max_file_chars: int = MAX_FILE_CHARS,
    max_total_chars: int = MAX_TOTAL_CHARS,
    timezone: str = "UTC",
) -> str:
    """The prelude of the daily notes among ``notes`` (``{path below memory/: text}``) of today
    and the ``days - 1`` days before it: oldest first, a day's files in name order, each under
    its path and cut to its most recent lines. The newest notes are kept when the total is over
    (``""`` when there is nothing to show)."""
    if days < 1:
        return ""
    first, _ = recent_days(today, days)
    wanted = sorted(
        (day, relative)
        for relative in notes
        if (day := daily_day(relative)) is not None and first <= day <= today and notes[relative].strip()
    )
    blocks: list[str] = []
    room = max_total_chars
    for _, relative in reversed(wanted):  # newest first, so they are the ones kept
        name = f"memory/{relative}"
        head = f"### {name}\n\n"
        body = _tail(notes[relative], min(max_file_chars, room - len(head)), name)
        if not body.strip():
            break
        blocks.append(head + body)
        room -= len(head) + len(body) + 2
    if not blocks:
        return ""
    # The date too: Anthropic's built-in memory tool is declared without a description.
    where = f"Today is {today} ({timezone}); today's note is memory/{today}.md (/memories/{today}.md)."
    return "\n\n".join([PRELUDE_HEADER, where, *reversed(blocks)])
