"""What every entry point does with its arguments before any I/O, written once.

``compose_soul``, ``compose_soul_async``, ``inspect_soul`` and :class:`~.cache.SoulCache`'s two
methods spell their keyword arguments out (for readers and type checkers), then hand them here:
a bad budget, profile or file name fails at once, named, and the location is resolved the same
way by each of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolnexus.composer.budget import Budget, checked_budget
from toolnexus.composer.profiles import select_names
from toolnexus.sources import BootstrapSource, resolve

__all__ = ["Call", "Narrowing", "Where"]

#: Where and how a location is read: ``storage_options``, ``fs``, ``follow_external_symlinks``,
#: ``engine`` (as the entry points take them).
Where = tuple[Mapping[str, Any] | None, Any, bool, str]

#: What is read and how much is kept: ``budget``, ``files``, ``profile`` (unchecked).
Narrowing = tuple[Budget | None, Iterable[str] | None, str | None]


@dataclass(frozen=True, slots=True)
class Call:
    """One entry point's arguments, checked: the names to read (in ``BOOTSTRAP_ORDER``), the
    budget, and resolve's arguments."""

    storage_options: Mapping[str, Any] | None
    fs: Any
    follow_external_symlinks: bool
    engine: str
    names: tuple[str, ...]
    budget: Budget | None

    @classmethod
    def checked(cls, where: Where, narrowing: Narrowing) -> Call:
        """Check ``narrowing`` (``ValueError`` naming the argument); nothing is read yet."""
        budget, files, profile = narrowing
        return cls(*where, names=select_names(files, profile), budget=checked_budget(budget))

    def source(self, dir: Any) -> BootstrapSource:
        """``dir`` resolved to its source (no I/O for most locations; see :func:`resolve`)."""
        return resolve(
            dir,
            storage_options=self.storage_options,
            fs=self.fs,
            follow_external_symlinks=self.follow_external_symlinks,
            engine=self.engine,
        )

    def cached(self) -> dict[str, Any]:
        """The keyword arguments of ``SoulCache.compose_soul`` and its async twin for this call."""
        return {
            "storage_options": self.storage_options,
            "fs": self.fs,
            "follow_external_symlinks": self.follow_external_symlinks,
            "engine": self.engine,
            "budget": self.budget,
            "files": self.names,
        }
