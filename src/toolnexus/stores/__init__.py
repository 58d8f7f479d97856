"""Where the memory tool reads and writes a home's files: one store per backend, each doing read →
edit → write as one indivisible update, or refusing (a local folder by ``flock``, object stores by
writes conditional on the version read, ``memory://`` and single-writer homes by a lock in this
process). A new backend's store is a :class:`CompareAndSwapStore` (docs/extending.md)."""

from __future__ import annotations

from toolnexus.stores.base import CompareAndSwapStore
from toolnexus.stores.lineage import Stored

__all__ = ["CompareAndSwapStore", "Stored"]
