"""obstore's fsspec adapter (``obstore.fsspec.FsspecStore``) passed as ``fs=``: read as any
fsspec filesystem, with the adapter's two differences absorbed here.

- Its ``cat_ranges`` ignores ``on_error`` (the first missing file fails the whole batch), so the
  batch is one ``_cat_file`` per name, gathered, each outcome kept apart; obstore's own errors
  are mapped once, by :func:`toolnexus._object_store.object_store_error` (a missing object is absent,
  denied access a :class:`PermissionError`, an empty object's 416 an empty file).
- Its ``pipe`` ignores write modes (no exclusive create, no ``If-Match``): like any filesystem
  without conditional writes, a home on it is refused by the memory tool unless
  ``single_writer=True``. For compare-and-swap writes use the obstore engine
  (``engine="obstore"`` with the same ``fs=``, or :class:`~toolnexus.sources.ObstoreSource`).

Registered in ``sources/__init__.py`` for the adapter's class and protocols (extra ``obstore``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any

from toolnexus._aio import run_on_loop
from toolnexus._fs import is_empty_range_error
from toolnexus._object_store import object_store_error
from toolnexus.sources.fsspec import FsspecSource

__all__ = ["ADAPTER", "ADAPTER_PROTOCOLS", "ObstoreFsspecSource"]

#: The adapter's class, as the protocol table names it (``module.Class``).
ADAPTER = "obstore.fsspec.FsspecStore"
#: The protocols it speaks (``obstore.fsspec.SUPPORTED_PROTOCOLS``, without importing obstore).
ADAPTER_PROTOCOLS = (
    *("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "azure"),
    *("http", "https", "file", "memory"),
)


class ObstoreFsspecSource(FsspecSource):
    """A persona home through obstore's fsspec adapter: ``fs=FsspecStore("s3", …)``."""

    refusal_hint = (
        " For compare-and-swap writes through obstore, pass engine='obstore' (CLI: --engine obstore)."
    )
    fork_safe = False  # obstore's Rust runtime, under the adapter

    def _fetch(self, names: Sequence[str], limit: int) -> list[Any]:
        results: list[Any] = run_on_loop(self.fs, self._capped_all, names, limit)
        return results

    def _fetch_coroutine(self, names: Sequence[str], limit: int) -> Coroutine[Any, Any, list[Any]]:
        return self._capped_all(names, limit)

    async def _capped_all(self, names: Sequence[str], limit: int) -> list[Any]:
        return list(await asyncio.gather(*(self._capped(self.path_of(name), limit) for name in names)))

    async def _capped(self, path: str, limit: int) -> Any:
        """Bytes ``[0, limit + 1)`` of ``path``, or its failure as a value (mapped)."""
        try:
            return await self.fs._cat_file(path, start=0, end=limit + 1)
        except Exception as error:
            return error if is_empty_range_error(error) else object_store_error(error)
