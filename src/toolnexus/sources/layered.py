"""Layered personas, base first: each name from the topmost layer holding it as a regular file
(as Jinja's ``ChoiceLoader``), all layers read at once; memory is written to the top layer only."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from toolnexus.sources.base import BootstrapSource, Entry, Match, Reading, SourceBase, as_source

if TYPE_CHECKING:
    from toolnexus.stores.base import MemoryStore


class LayeredSource(SourceBase):
    """Several sources read as one persona: ``LayeredSource([base, top])`` (any sources, mixed);
    ``location`` joins the layers' with ``" + "``, base first."""

    def __init__(self, layers: Sequence[BootstrapSource]) -> None:
        if not layers:
            raise ValueError("a layered persona needs at least one layer")
        self.layers = tuple(as_source(layer) for layer in layers)
        self.location = " + ".join(layer.location for layer in self.layers)

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """The base in this thread, the others in worker threads; failures raised in layer order."""
        base, *others = self.layers
        with ThreadPoolExecutor(max(1, len(others)), thread_name_prefix="toolnexus-layer") as pool:
            futures = [
                pool.submit(layer.read_entries, names, limit, exact_sizes=exact_sizes) for layer in others
            ]
            first = base.read_entries(names, limit, exact_sizes=exact_sizes)
            readings = [future.result() for future in futures]
        return self._merge([first, *readings])

    async def read_entries_async(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Reading:
        results = await asyncio.gather(
            *(layer.read_entries_async(names, limit, exact_sizes=exact_sizes) for layer in self.layers),
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

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        return self._merge([layer.read_folder(folder, limit, match=match) for layer in self.layers])

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """The top layer's writer: a persona's own notes never land in a shared base."""
        return self.layers[-1].writer(name, single_writer=single_writer)
