"""The text of Anthropic's reference memory tool (``BetaLocalFilesystemMemoryTool``), reproduced
sentence for sentence and byte for byte, as Claude has seen it in training; pure. toolnexus adds
two things: a view longer than ``max_chars`` is cut at a whole line (saying how to page with
``view_range``), and a ``view_range`` starting past the end is an error (the reference shows nothing)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolnexus._reply import ToolReply

#: Views (and str_replace snippets) are cut past this many characters, at a whole line.
DEFAULT_VIEW_CHARS = 16_000

_WIDTH = 6  # len(str(999999)): the reference's line-number column


def format_size(size: int) -> str:
    """``0B``, ``512B``, ``1K``, ``1.5K``, ``2M``: the reference's sizes."""
    if size == 0:
        return "0B"
    index = min((size.bit_length() - 1) // 10, 3)
    scaled = size / 1024**index
    unit = "BKMG"[index]
    return f"{int(scaled)}{unit}" if scaled == int(scaled) else f"{scaled:.1f}{unit}"


def listing(path: str, files: Mapping[str, int]) -> str:
    """A folder's listing, two levels deep, from its files ``{path below it: size}``; a folder's
    size is the total of its files (object stores have no directory entry to measure)."""
    entries: dict[tuple[str, ...], int] = {}
    for relative, size in files.items():
        parts = tuple(relative.split("/"))
        for depth in (1, 2):
            if len(parts) >= depth:
                key = parts[:depth] + (("",) if len(parts) > depth else ())
                entries[key] = entries.get(key, 0) + size
    header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
    lines = [header, f"{format_size(sum(files.values()))}\t{path}"]
    for key in sorted(entries, key=lambda key: tuple(part for part in key if part)):
        lines.append(f"{format_size(entries[key])}\t{path}/{'/'.join(key)}")
    return "\n".join(lines)


def _numbered(lines: list[str], first: int, max_chars: int) -> list[str]:
    """``lines`` numbered from ``first``, cut at a whole line past ``max_chars`` (and told so)."""
    shown: list[str] = []
    used = 0
    for offset, line in enumerate(lines):
        numbered = f"{str(first + offset).rjust(_WIDTH)}\t{line}"
        if used + len(numbered) > max_chars:
            number, total = first + offset, first + len(lines) - 1
            if not shown:  # one line longer than the bound: show its start
                shown.append(numbered[:max_chars])
                number += 1
                how = f"line {number - 1} is longer than {max_chars} characters; its start is shown"
            else:
                how = f"lines {first}-{number - 1} of {first}-{total} are shown"
            if number <= total:
                how += f"; view the rest with view_range [{number}, {total}]"
            shown.append(f"[cut at {max_chars} characters: {how}]")
            return shown
        shown.append(numbered)
        used += len(numbered) + 1
    return shown


def view(path: str, text: str, view_range: Any, max_chars: int) -> ToolReply:
    """A file with line numbers; ``view_range = [first, last]`` (1-based, ``-1``: the end)."""
    lines = text.split("\n")
    first = 1
    if view_range is not None and not (
        isinstance(view_range, list | tuple)
        and all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
    ):
        return ToolReply(
            f"Invalid `view_range` parameter: {view_range!r}. It should be a list of two integers "
            "[first, last] (1-based; last -1 for the end of the file).",
            is_error=True,
        )
    if view_range and len(view_range) == 2:
        start = max(1, view_range[0]) - 1
        if start >= len(lines):
            return ToolReply(
                f"Invalid `view_range` parameter: {list(view_range)}. Its first element "
                f"`{view_range[0]}` should be within the range of lines of the file: [1, {len(lines)}].",
                is_error=True,
            )
        end = len(lines) if view_range[1] == -1 else view_range[1]
        lines, first = lines[start:end], start + 1
    header = f"Here's the content of {path} with line numbers:"
    return ToolReply(header + "\n" + "\n".join(_numbered(lines, first, max_chars)))


def create(text: str, file_text: str, path: str) -> tuple[str | None, str]:
    """A new file's text; one that holds notes is refused, with toolnexus's advice."""
    advice = "It holds notes: view it, then edit it with str_replace or insert."
    if text:
        return None, f"File {path} already exists\n{advice}"
    return file_text, f"File created successfully at: {path}"


def replace(text: str, old: str, new: str, path: str, max_chars: int) -> tuple[str | None, str]:
    """``old`` → ``new`` where ``old`` occurs exactly once: ``(new text, the snippet reply)``,
    or ``(None, why not)`` naming the lines of several matches."""
    if not old:
        return None, (
            f"No replacement was performed, old_str is empty.\n"
            f"Copy the exact text to replace from a view of {path}."
        )
    count = text.count(old)
    if count == 0:
        return None, f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
    if count > 1:
        starts = (match.start() for match in re.finditer(f"(?={re.escape(old)})", text))  # overlapping
        lines = [text.count("\n", 0, start) + 1 for start in starts]
        return None, (
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
            f"{', '.join(map(str, lines))}. Please ensure it is unique"
        )
    position = text.find(old)
    changed = text[:position].count("\n")
    new_text = text[:position] + new + text[position + len(old) :]
    new_lines = new_text.split("\n")
    start, end = max(0, changed - 2), min(len(new_lines), changed + 3)
    snippet = _numbered(new_lines[start:end], start + 1, max_chars)
    header = "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
    return new_text, header + "\n" + "\n".join(snippet)


def insert(text: str, line: int, insert_text: str, path: str) -> tuple[str | None, str]:
    """``insert_text`` as a line after line ``line`` (0: at the top); the file ends with a line break."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not 0 <= line <= len(lines):
        return None, (
            f"Invalid `insert_line` parameter: {line}. It should be within the range [0, {len(lines)}]."
        )
    lines.insert(line, insert_text.rstrip("\n"))
    new_text = "\n".join(lines)
    return (new_text if new_text.endswith("\n") else new_text + "\n"), f"The file {path} has been edited."
