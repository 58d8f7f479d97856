"""A budget applied to the decoded bodies: each file cut to a limit, the total shared fairly. Pure.
A cut keeps ~75 % of what fits from the head and the rest from the tail around one marker line
(counted), each end moved to a line break within 10 % (keeping less), else a space; token limits are
met by measuring and shrinking by the excess (token counts are not additive). The total is
water-filled over whole sections, so one huge AGENTS.md never squeezes MEMORY.md out; when a share
cannot hold a header and the marker (:data:`MIN_SHARE`), the last such file is left out and the
shares worked out again. Cuts are visible: the marker, and one warning per file."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple

from toolnexus._tokens import EncodingCounter
from toolnexus.composer.budget import Budget

logger = logging.getLogger("toolnexus.agents")

#: Head and tail of what a cut keeps: ~75 % from the start, the rest from the end.
HEAD_FRACTION = 0.75

#: A file whose share of the total is below this many units is left out, never cut to nothing.
MIN_SHARE = 64


class Fitted(NamedTuple):
    """One present file after the budget: its body (``None``: left out), its size and what was
    kept of it, and the limit it was cut to (header included), all in the budget's unit."""

    name: str
    body: str | None
    size: int
    kept: int
    truncated: bool
    limit: int | None = None


def marker(name: str, kept: int, size: int, noun: str = "characters") -> str:
    """The line that stands for what a cut removed."""
    return f"[… truncated: kept {kept} of {size} {noun} of {name} …]"


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
    if isinstance(counter, EncodingCounter):
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
        parts = (body[:head], marker(name, kept, size, budget.noun), body[tail:])
        text = "\n".join(part for part in parts if part)
        excess = count(header + text) - limit
        if excess <= 0:
            return text, kept
        room -= excess
    alone = marker(name, 0, size, budget.noun)
    return (alone, 0) if count(header + alone) <= limit else None


def _shares(sizes: Sequence[int], available: int) -> list[int]:
    """Max-min fair integer shares of ``available``: a size that fits the even split of what is
    left gets exactly itself; the larger ones split the rest evenly, earlier ones first by 1."""
    shares = [0] * len(sizes)
    remaining = max(available, 0)
    by_size = sorted(range(len(sizes)), key=lambda index: (sizes[index], index))
    for position, index in enumerate(by_size):
        if sizes[index] * (len(sizes) - position) <= remaining:
            shares[index] = sizes[index]
            remaining -= sizes[index]
            continue
        larger = sorted(by_size[position:])
        base, extra = divmod(remaining, len(larger))
        for rank, other in enumerate(larger):
            shares[other] = base + (rank < extra)
        break
    return shares


def _untouched(budget: Budget, names: Sequence[str], bodies: Sequence[str]) -> bool:
    """Whether a budget in characters has nothing to cut (the common case: a few C-level sums)."""
    if budget.unit != "chars":
        return False
    if budget.per_file is not None and max(map(len, bodies), default=0) > budget.per_file:
        return False
    # "## NAME\n\n" is 5 characters more than the name; sections are joined by "\n\n".
    chars = sum(map(len, names)) + sum(map(len, bodies)) + 7 * len(bodies) - 2
    return budget.total is None or chars <= budget.total


def fit(location: str, names: Sequence[str], bodies: Sequence[str], budget: Budget) -> list[Fitted]:
    """Apply ``budget`` to the present files' bodies (``names[i]``'s is ``bodies[i]``), in order;
    each cut or left-out file is logged as a warning naming it."""
    if _untouched(budget, names, bodies):
        return [
            Fitted(name, body, len(body), len(body), False) for name, body in zip(names, bodies, strict=True)
        ]
    state = _State(names, bodies, budget)
    if budget.per_file is not None:
        why = f"the per-file budget of {budget.per_file} {budget.noun}"
        for index, body in enumerate(bodies):
            if state.sizes[index] > budget.per_file:
                result = cut(body, budget.per_file, names[index], budget, size=state.sizes[index])
                state.apply(index, result, budget.per_file, why)
    if budget.total is not None:
        state.share_total(budget.total)
    return state.finish(location)


def fitted_sections(
    location: str, names: list[str], sections: list[str], bodies: Sequence[str], budget: Budget
) -> tuple[list[str], list[str]]:
    """``(sections, found)`` fitted to ``budget``: the very lists given when it cuts nothing."""
    if _untouched(budget, names, bodies):
        return sections, names
    kept = [file for file in fit(location, names, bodies, budget) if file.body is not None]
    return [f"## {file.name}\n\n{file.body}" for file in kept], [file.name for file in kept]


class _State:
    """The files as the budget leaves them so far: texts (``None``: left out), units kept, why."""

    def __init__(self, names: Sequence[str], bodies: Sequence[str], budget: Budget) -> None:
        self.names, self.bodies, self.budget = names, bodies, budget
        self.sizes = [budget.measure(body) for body in bodies]
        self.texts: list[str | None] = list(bodies)
        self.kept = list(self.sizes)
        self.limits: dict[int, tuple[int, str]] = {}

    def apply(self, index: int, result: tuple[str, int] | None, limit: int, why: str) -> None:
        self.texts[index], self.kept[index] = (None, 0) if result is None else result
        self.limits[index] = (limit, why)

    def section_size(self, index: int) -> int:
        """Units of the file's section as it stands (a whole file far over ``total`` is estimated)."""
        text, header, budget = self.texts[index], f"## {self.names[index]}\n\n", self.budget
        assert text is not None
        if budget.unit == "chars":
            return len(header) + len(text)
        if index not in self.limits and budget.total and self.sizes[index] > budget.total:
            return budget.measure(header) + self.sizes[index]  # cut, whatever its share
        return budget.measure(header + text)

    def share_total(self, total: int) -> None:
        """Water-fill ``total`` over the sections; leave out the last file whose share is too small
        (a file left out is asked no more, so each section is measured once)."""
        active = [index for index, text in enumerate(self.texts) if text is not None]
        section = {index: self.section_size(index) for index in active}
        while active:
            separators = 2 * (len(active) - 1) if self.budget.unit == "chars" else 0
            shares = _shares([section[index] for index in active], total - separators)
            over = {i: share for i, share in zip(active, shares, strict=True) if section[i] > share}
            cuts: dict[int, tuple[str, int]] = {}
            for index in reversed(over):
                result = self._cut_to(index, over[index])
                if result is None:  # too small: leave this file out, then share again
                    self.apply(index, None, over[index], self._why(over[index], total))
                    active.remove(index)
                    break
                cuts[index] = result
            else:
                for index, share in over.items():
                    self.apply(index, cuts[index], share, self._why(share, total))
                return

    def _why(self, share: int, total: int) -> str:
        return f"its share of the total budget ({share} of {total} {self.budget.noun})"

    def _cut_to(self, index: int, share: int) -> tuple[str, int] | None:
        if share < MIN_SHARE:
            return None
        name = self.names[index]
        return cut(
            self.bodies[index], share, name, self.budget, size=self.sizes[index], header=f"## {name}\n\n"
        )

    def finish(self, location: str) -> list[Fitted]:
        fitted = []
        noun = self.budget.noun
        for index, name in enumerate(self.names):
            text, size, kept = self.texts[index], self.sizes[index], self.kept[index]
            limit, why = self.limits.get(index, (None, ""))
            if text is None:
                logger.warning(
                    "%s: %s (%d %s) left out of the soul: %s cannot hold its header and truncation marker",
                    location, name, size, noun, why,
                )  # fmt: skip
            elif limit is not None:
                logger.warning(
                    "%s: %s (%d %s) cut to %s: kept %d around a truncation marker",
                    location, name, size, noun, why, kept,
                )  # fmt: skip
            fitted.append(Fitted(name, text, size, kept, limit is not None and text is not None, limit))
        return fitted
