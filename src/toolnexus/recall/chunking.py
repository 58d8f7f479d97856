"""Line-aligned chunks with overlap, and the *core* of each: the lines it alone answers for.

A chunk is ~:data:`CHUNK_WORDS` words (~400 tokens) and starts ~:data:`OVERLAP_WORDS` words
(~80 tokens) before the previous one ends, so a fact on a boundary is whole in one of them. The
cores (a chunk's lines up to where the next begins) partition the file: every line belongs to
exactly one core, which is what makes "this line was found in that chunk" a function. Pure.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["CHUNK_WORDS", "OVERLAP_WORDS", "Chunk", "chunks"]

CHUNK_WORDS, OVERLAP_WORDS = 300, 60  # ~400 and ~80 tokens
WORD = re.compile(r"\w+")


class Chunk(NamedTuple):
    """1-based inclusive line ranges: what the chunk holds, and its core within it."""

    start: int
    end: int
    core_start: int
    core_end: int


def chunks(text: str) -> list[Chunk]:
    """The chunks of ``text`` (none for a file without lines)."""
    lines = text.splitlines()
    ranges: list[tuple[int, int]] = []
    start = 0
    while start < len(lines):
        end, words = start, 0
        while end < len(lines) and (words < CHUNK_WORDS or end == start):
            words += len(WORD.findall(lines[end]))
            end += 1
        ranges.append((start + 1, end))
        if end >= len(lines):
            break
        back, words = end, 0
        while back > start + 1 and words < OVERLAP_WORDS:
            back -= 1
            words += len(WORD.findall(lines[back]))
        start = back
    nexts = [first for first, _ in ranges[1:]]
    return [
        Chunk(first, last, first, (nexts[i] - 1) if i < len(nexts) else last)
        for i, (first, last) in enumerate(ranges)
    ]
