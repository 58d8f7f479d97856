"""Where the memory tool reads and writes a home's files: one store per backend, each doing
read → edit → write as one indivisible update, or refusing. A local folder takes ``flock`` and
an atomic rename; S3, Azure Blob, GCS and the obstore engine write conditionally on the version
read, once :mod:`.probe` has seen the server enforce it; ``memory://`` and ``single_writer=True``
homes write under a lock in this process; any other filesystem is refused. Which store a home
gets is its source's decision (``writer``).
"""

from __future__ import annotations

from toolnexus.stores.base import (
    MAX_ATTEMPTS,
    MEMORY_FILE,
    Change,
    CompareAndSwapStore,
    FolderStore,
    MemoryStore,
    Moved,
    Plan,
)
from toolnexus.stores.fsspec import AzureBlobStore, FsspecStore, GcsStore, S3Store
from toolnexus.stores.lineage import Stored
from toolnexus.stores.local import LocalStore
from toolnexus.stores.obstore import ObstoreStore
from toolnexus.stores.probe import forget_verdicts, require_conditional_delete, require_enforced

__all__ = [
    "MAX_ATTEMPTS",
    "MEMORY_FILE",
    "AzureBlobStore",
    "Change",
    "CompareAndSwapStore",
    "FolderStore",
    "FsspecStore",
    "GcsStore",
    "LocalStore",
    "MemoryStore",
    "Moved",
    "ObstoreStore",
    "Plan",
    "S3Store",
    "Stored",
    "forget_verdicts",
    "require_conditional_delete",
    "require_enforced",
]
