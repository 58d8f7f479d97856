"""Stores over an async fsspec filesystem (adlfs, gcsfs): each primitive is a coroutine, run
from sync code on the filesystem's own loop — the plumbing written once for Azure and GCS."""

from __future__ import annotations

from toolnexus._aio import run_on_loop
from toolnexus.stores.base import CompareAndSwapStore
from toolnexus.stores.lineage import Stored

__all__ = ["LoopedStore"]


class LoopedStore(CompareAndSwapStore):
    """A :class:`CompareAndSwapStore` whose subclass writes ``_get``, ``_put`` (``lineage`` is
    ``None`` for a plain put) and ``_delete`` as coroutines of ``self.fs``."""

    async def _get(self, path: str) -> Stored:
        raise NotImplementedError

    async def _put(self, path: str, data: bytes, version: str | None, lineage: str | None) -> bool:
        raise NotImplementedError

    async def _delete(self, path: str) -> None:
        raise NotImplementedError

    def get(self, path: str) -> Stored:
        result: Stored = run_on_loop(self.fs, self._get, path)
        return result

    def put(self, path: str, data: bytes, version: str | None) -> bool:
        result: bool = run_on_loop(self.fs, self._put, path, data, version, None)
        return result

    def put_with_lineage(self, path: str, data: bytes, version: str | None, lineage: str) -> bool:
        result: bool = run_on_loop(self.fs, self._put, path, data, version, lineage)
        return result

    def delete(self, path: str) -> None:
        run_on_loop(self.fs, self._delete, path)
