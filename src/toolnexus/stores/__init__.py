"""Where the memory tool reads and writes a home's file (MEMORY.md unless told otherwise): one
store per backend, each doing read → edit → write as one indivisible update — or refusing.

- local folder: ``flock`` on the home + atomic rename — no lost edit among the processes of one
  machine (not across NFS clients);
- S3 (s3fs): ``If-Match`` / ``If-None-Match: *`` on the PUT; Azure Blob (adlfs): the same on the
  upload; GCS (gcsfs): ``ifGenerationMatch`` (``0``: must not exist); any of the three through
  the obstore engine: obstore's conditional put — no lost edit among any processes anywhere,
  once :mod:`.probe` has seen the server enforce them (else every edit is refused);
- ``memory://``: a lock in this process — no lost edit (no other process can reach it);
- any other fsspec filesystem: refused, unless ``single_writer=True``.

``single_writer=True`` is the owner's word that one process writes the home: every fsspec store
then writes plainly (no conditions, no probe) under the in-process lock. Every read is capped at
``MAX_BOOTSTRAP_FILE_BYTES + 1`` bytes. Only the named file is ever written.

Which store a home gets is its source's decision (``writer``), made from its backend's
registration (:attr:`toolnexus.sources.FsspecSource.conditional_store`): this layer only
provides the mechanisms.

Every store is also a :class:`FolderStore`: ``store.file("memory/projects/aster.md")`` is the store
of another file of the same home with the same mechanism (and probe), and ``listing``, ``remove``
and ``rename`` give the memory tool its topic files. On object stores a rename is a
must-not-exist copy followed by a delete conditional on the version copied (refused on a server
that does not enforce that condition: see :mod:`.probe`).
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
