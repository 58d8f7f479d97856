"""Layered personas: one persona composed from several homes, base first, top last.

Each bootstrap name comes from the topmost layer that has it as a regular file (a team base's
AGENTS.md and TOOLS.md, each agent's SOUL.md and MEMORY.md on top, a developer's override above
that), like Jinja's ``ChoiceLoader`` read from the top. Every layer is read at once — in threads
on the blocking path, with ``asyncio.gather`` on the async one — so three S3 layers cost about
one round trip, not three. A layer that does not exist is an error naming it: a persona silently
missing its base is worse than a loud failure. MEMORY.md is written to the top layer only, so the
base stays shared and untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from toolnexus.sources.base import (
    BootstrapSource,
    Entry,
    Reading,
    SourceBase,
    read_entries,
    read_entries_async,
    writer_of,
)

if TYPE_CHECKING:
    from toolnexus.stores import MemoryStore

__all__ = ["LayeredSource"]


class LayeredSource(SourceBase):
    """Several sources read as one persona: ``LayeredSource([base, top])`` (any sources, mixed).

    ``compose_soul([base, top])`` builds one from locations; build one yourself to layer sources
    of your own. ``location`` joins the layers' locations with ``" + "``, base first.
    """

    def __init__(self, layers: Sequence[BootstrapSource]) -> None:
        if not layers:
            raise ValueError("a layered persona needs at least one layer")
        self.layers = tuple(layers)
        self.location = " + ".join(layer.location for layer in self.layers)

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """All layers at once (the base in this thread, the others in worker threads)."""
        if len(self.layers) == 1:
            return self._merge([read_entries(self.layers[0], names, limit, exact_sizes=exact_sizes)])
        with ThreadPoolExecutor(len(self.layers) - 1, thread_name_prefix="toolnexus-layer") as pool:
            futures = [
                pool.submit(read_entries, layer, names, limit, exact_sizes=exact_sizes)
                for layer in self.layers[1:]
            ]
            # A failure is raised in layer order; leaving the pool waits for the other reads first.
            base = read_entries(self.layers[0], names, limit, exact_sizes=exact_sizes)
            readings = [future.result() for future in futures]
        return self._merge([base, *readings])

    async def read_entries_async(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Reading:
        """All layers at once on the event loop; the first failure (in layer order) is raised."""
        results = await asyncio.gather(
            *(read_entries_async(layer, names, limit, exact_sizes=exact_sizes) for layer in self.layers),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return self._merge([result for result in results if isinstance(result, Reading)])

    def _merge(self, readings: list[Reading]) -> Reading:
        """Topmost regular file wins; a name that is only ever a non-file stays skipped."""
        merged: dict[str, Entry] = {}
        for reading in readings:  # base first: a later (higher) layer replaces what it holds
            for name, entry in reading.entries.items():
                if entry.data is not None or name not in merged or merged[name].data is None:
                    merged[name] = Entry(entry.data, entry.size, entry.origin or reading.location, entry.why)
        return Reading(self.location, merged)

    def read_folder(self, folder: str, limit: int) -> Reading:
        """Each layer's files below ``folder``, the topmost winning per path (as :meth:`read_entries`)."""
        readings = [
            layer.read_folder(folder, limit) for layer in self.layers if isinstance(layer, SourceBase)
        ]
        return self._merge(readings)

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """The top layer's writer: a persona's own notes never land in a shared base."""
        return writer_of(self.layers[-1], name, single_writer=single_writer)
