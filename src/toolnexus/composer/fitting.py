"""The total shared fairly among the files (max-min fairness, water-filling). Pure.

Every section that fits its share of what is left stays whole; the rest is split evenly (to
the unit; the first in :data:`BOOTSTRAP_ORDER` get the remainder) among the larger ones, so one
huge AGENTS.md never squeezes MEMORY.md out. When a share cannot hold a header and the marker
(under :data:`MIN_SHARE` units, or too small for the marker), the last such file in
:data:`BOOTSTRAP_ORDER` is left out and the shares are worked out again without it. Shares
count sections (``## NAME`` header included); in characters the ``\\n\\n`` separators
are taken off the total first. Deterministic: same input, same soul.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

from toolnexus.composer.budget import Budget
from toolnexus.composer.cutting import cut
from toolnexus.composer.parts import SECTION_SEPARATOR

__all__ = ["MIN_SHARE", "Fitted", "fit", "fitted_sections", "fitted_soul"]

logger = logging.getLogger("toolnexus.agents")


class Fitted(NamedTuple):
    """One present file after the budget: its body (``None``: left out), its size and what was
    kept of it, and the limit it was cut to (per file, or its share of the total, header
    included), all in the budget's unit."""

    name: str
    body: str | None
    size: int
    kept: int
    truncated: bool
    limit: int | None = None


#: A file whose share of the total is below this many units is left out, never cut to nothing.
MIN_SHARE = 64


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


def fit(location: str, bodies: Sequence[tuple[str, str]], budget: Budget) -> list[Fitted]:
    """Apply ``budget`` to the present files' bodies (``(name, body)`` in order); deterministic.

    Each cut or left-out file is logged as a warning naming it; see the module for the rules.
    """
    if _untouched(bodies, budget):
        return [Fitted(name, body, len(body), len(body), False) for name, body in bodies]
    state = _State(bodies, budget)
    if budget.per_file is not None:
        for index, (name, body) in enumerate(bodies):
            if state.sizes[index] > budget.per_file:
                result = cut(body, budget.per_file, name, budget, size=state.sizes[index])
                why = f"the per-file budget of {budget.per_file} {budget.noun}"
                state.apply(index, result, budget.per_file, why)
    if budget.total is not None:
        state.share_total(budget.total)
    return state.finish(location)


def _untouched(bodies: Sequence[tuple[str, str]], budget: Budget) -> bool:
    """Whether a budget in characters has nothing to cut (the common case, checked cheaply)."""
    if budget.unit != "chars":
        return False
    if budget.per_file is not None and any(len(body) > budget.per_file for _, body in bodies):
        return False
    if budget.total is None:
        return True
    # "## NAME\n\n" is 5 characters more than the name; sections are joined by "\n\n".
    return sum(len(name) + len(body) + 7 for name, body in bodies) - 2 <= budget.total


def fitted_sections(
    location: str, bodies: Sequence[tuple[str, str]], budget: Budget
) -> tuple[list[str], list[str]]:
    """``(sections, found)`` of ``bodies`` fitted to ``budget``: ``found`` names the sections kept."""
    if _untouched(bodies, budget):
        kept: Sequence[tuple[str, str | None]] = bodies
    else:
        kept = [(file.name, file.body) for file in fit(location, bodies, budget) if file.body is not None]
    return [f"## {name}\n\n{body}" for name, body in kept], [name for name, _ in kept]


def fitted_soul(location: str, bodies: Sequence[tuple[str, str]], budget: Budget) -> tuple[str, list[str]]:
    """``(soul, found)`` of ``bodies`` fitted to ``budget``: :func:`fitted_sections`, joined."""
    sections, found = fitted_sections(location, bodies, budget)
    return SECTION_SEPARATOR.join(sections), found


class _State:
    """The files as the budget leaves them so far: texts (``None``: left out), units kept, why."""

    def __init__(self, bodies: Sequence[tuple[str, str]], budget: Budget) -> None:
        self.bodies, self.budget = bodies, budget
        self.sizes = [budget.measure(body) for _, body in bodies]
        self.texts: list[str | None] = [body for _, body in bodies]
        self.kept = list(self.sizes)
        self.limits: dict[int, tuple[int, str]] = {}
        self._section_sizes: dict[int, int] = {}

    def header(self, index: int) -> str:
        return f"## {self.bodies[index][0]}\n\n"

    def apply(self, index: int, result: tuple[str, int] | None, limit: int, why: str) -> None:
        self.texts[index], self.kept[index] = (None, 0) if result is None else result
        self.limits[index] = (limit, why)
        self._section_sizes.pop(index, None)

    def section_size(self, index: int) -> int:
        """Units of the file's section as it stands (a whole file far over ``total`` is estimated)."""
        known = self._section_sizes.get(index)
        if known is None:
            text, header, budget = self.texts[index], self.header(index), self.budget
            assert text is not None
            if budget.unit == "chars":
                known = len(header) + len(text)
            elif index not in self.limits and budget.total and self.sizes[index] > budget.total:
                known = budget.measure(header) + self.sizes[index]  # cut, whatever its share
            else:
                known = budget.measure(header + text)
            self._section_sizes[index] = known
        return known

    def share_total(self, total: int) -> None:
        """Water-fill ``total`` over the sections; leave out the last file whose share is too small."""
        active = [index for index, text in enumerate(self.texts) if text is not None]
        while active:
            separators = 2 * (len(active) - 1) if self.budget.unit == "chars" else 0
            shares = _shares([self.section_size(index) for index in active], total - separators)
            over = {i: share for i, share in zip(active, shares, strict=True) if self.section_size(i) > share}
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
        name, body = self.bodies[index]
        return cut(body, share, name, self.budget, size=self.sizes[index], header=self.header(index))

    def finish(self, location: str) -> list[Fitted]:
        fitted = []
        noun = self.budget.noun
        for index, (name, _) in enumerate(self.bodies):
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
