"""One file cut to a limit: head, one marker line, tail — on whole characters. Pure.

The head keeps ~75 % of what fits and the tail the rest; each cut moves to a line break when
one lies within 10 % of what is kept (towards keeping less, never more), else to a space. The marker counts
toward the limit, so a cut body is within it. Token limits are met by measuring the result and
shrinking by the excess (token counts of concatenated text are not exactly additive).
"""

from __future__ import annotations

from collections.abc import Callable

from toolnexus._tokens import Slicer
from toolnexus.composer.budget import Budget

__all__ = ["HEAD_FRACTION", "cut", "marker"]

#: Head and tail of what a cut keeps: ~75 % from the start, the rest from the end.
HEAD_FRACTION = 0.75


def marker(name: str, kept: int, size: int, noun: str = "characters") -> str:
    """The line that stands for what a cut removed."""
    return f"[… truncated: kept {kept} of {size} {noun} of {name} …]"


def _join(head: str, line: str, tail: str) -> str:
    return "\n".join(part for part in (head, line, tail) if part)


def _head_end(body: str, end: int, window: int) -> int:
    """``end``, or a line break (else a space) up to ``window`` before it: whole lines, or words."""
    if end <= 0:
        return 0
    start = max(0, end - window)
    line_break = body.rfind("\n", start, end + 1)
    if line_break < 0:
        line_break = body.rfind(" ", start, end + 1)
    return end if line_break < 0 else line_break


def _tail_start(body: str, start: int, window: int) -> int:
    """``start``, or just after a line break (else a space) up to ``window`` after it."""
    if start >= len(body):
        return len(body)
    end = min(start + window, len(body))
    line_break = body.find("\n", start - 1, end)
    if line_break < 0:
        line_break = body.find(" ", start - 1, end)
    return start if line_break < 0 else line_break + 1


def _largest(fits: Callable[[int], bool], most: int, guess: int) -> int:
    """The largest ``x`` in ``[0, most]`` with ``fits(x)`` (monotone), galloping from ``guess``."""
    guess = max(1, min(most, guess))
    if fits(guess):
        low, high = guess, most + 1
        step = guess
        while low + step <= most and fits(low + step):
            low, step = low + step, step * 2
        high = min(high, low + step)
    else:
        low, high = 0, guess
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def _head_tail(body: str, room: int, budget: Budget, size: int) -> tuple[int, int]:
    """Character positions ``(head_end, tail_start)`` keeping about ``room`` units of ``body``."""
    head_units = int(room * HEAD_FRACTION)
    tail_units = room - head_units
    if budget.unit == "chars":
        window = room // 10
        return _head_end(body, head_units, window), _tail_start(body, len(body) - tail_units, window)
    count = budget.measure
    counter = budget.token_counter
    if isinstance(counter, Slicer):
        head, tail = counter.prefix_end(body, head_units), counter.suffix_start(body, tail_units)
    else:  # any str -> int callable: search, guided by the body's characters per token
        per_unit = len(body) / max(size, 1)
        head = _largest(lambda h: count(body[:h]) <= head_units, len(body), round(head_units * per_unit))
        kept = _largest(
            lambda t: count(body[len(body) - t :]) <= tail_units, len(body), round(tail_units * per_unit)
        )
        tail = len(body) - kept
    window = (head + len(body) - tail) // 10  # in characters, like the cuts
    head = _head_end(body, head, window)
    return head, max(head, _tail_start(body, max(tail, 1), window))


def cut(
    body: str, limit: int, name: str, budget: Budget, *, size: int, header: str = ""
) -> tuple[str, int] | None:
    """``body`` as head + marker + tail with ``measure(header + result) <= limit``, and the units
    kept; ``None`` when not even the marker fits. Cuts fall between characters."""
    count = budget.measure
    if budget.unit == "chars":
        room = limit - len(header) - len(marker(name, limit, size)) - 2
        attempts = 1
    else:
        room = limit - count(header + "\n" + marker(name, size, size, "tokens") + "\n")
        attempts = 8  # token counts are not additive: check, and shrink by the excess
    for _ in range(attempts):
        if room < 0:
            break
        head, tail = _head_tail(body, room, budget, size)
        kept = count(body[:head]) + count(body[tail:]) if budget.unit == "tokens" else head + len(body) - tail
        text = _join(body[:head], marker(name, kept, size, budget.noun), body[tail:])
        excess = count(header + text) - limit
        if excess <= 0:
            return text, kept
        room -= excess
    alone = marker(name, 0, size, budget.noun)
    return (alone, 0) if count(header + alone) <= limit else None
