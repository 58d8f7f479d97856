"""Where the memory tool reads and writes a home's files: one store per backend, each doing
read → edit → write as one indivisible update, or refusing. A local folder takes ``flock`` and
an atomic rename; S3, Azure Blob, GCS and the obstore engine write conditionally on the version
read, once :mod:`.probe` has seen the server enforce it; ``memory://`` and ``single_writer=True``
homes write under a lock in this process; any other filesystem is refused. Which store a home
gets is its source's decision (``writer``). A new backend's store is a
:class:`CompareAndSwapStore` (docs/extending.md); the rest is imported from its module.
"""

from __future__ import annotations

from toolnexus.stores.base import CompareAndSwapStore
from toolnexus.stores.lineage import Stored

__all__ = ["CompareAndSwapStore", "Stored"]
