"""What the entry points check before any I/O, written once: a bad budget, profile or file
name fails at once, named."""

from __future__ import annotations

from collections.abc import Iterable

from toolnexus.composer.budget import Budget, checked_budget
from toolnexus.composer.profiles import select_names

__all__ = ["narrowing"]


def narrowing(
    budget: Budget | None, files: Iterable[str] | None, profile: str | None
) -> tuple[tuple[str, ...], Budget | None]:
    """``(names to read in BOOTSTRAP_ORDER, budget)``, checked (``ValueError`` naming the argument)."""
    return select_names(files, profile), checked_budget(budget)
