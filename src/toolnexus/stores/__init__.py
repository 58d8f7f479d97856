"""Where the memory tool reads and writes a home's file (MEMORY.md unless told otherwise): one
store per backend, each doing read → edit → write as one indivisible update — or refusing.

- local folder: ``flock`` on the home + atomic rename — no lost edit among the processes of one
  machine (not across NFS clients);
- S3 (s3fs): ``If-Match`` / ``If-None-Match: *`` on the PUT; Azure Blob (adlfs): the same on the
  upload; GCS (gcsfs): ``ifGenerationMatch`` (``0``: must not exist) — no lost edit among any
  processes anywhere, once :mod:`.probe` has seen the server enforce them (else every edit is
  refused);
- ``memory://``: a lock in this process — no lost edit (no other process can reach it);
- any other fsspec filesystem: refused, unless ``single_writer=True``.

``single_writer=True`` is the owner's word that one process writes the home: every fsspec store
then writes plainly (no conditions, no probe) under the in-process lock. Every read is capped at
``MAX_BOOTSTRAP_FILE_BYTES + 1`` bytes. Only the named file is ever written.
"""

from __future__ import annotations

from typing import Any

from toolnexus.errors import BootstrapError, location_error, read_error
from toolnexus.stores.azure import AzureBlobStore
from toolnexus.stores.base import MAX_ATTEMPTS, MEMORY_FILE, Change, CompareAndSwapStore, MemoryStore, Plan
from toolnexus.stores.gcs import GcsStore
from toolnexus.stores.local import LocalStore
from toolnexus.stores.plain import FsspecStore
from toolnexus.stores.probe import forget_verdicts, require_enforced
from toolnexus.stores.s3 import S3Store

__all__ = [
    "MAX_ATTEMPTS",
    "MEMORY_FILE",
    "AzureBlobStore",
    "Change",
    "CompareAndSwapStore",
    "FsspecStore",
    "GcsStore",
    "LocalStore",
    "MemoryStore",
    "Plan",
    "S3Store",
    "forget_verdicts",
    "fsspec_store",
]

#: Protocols whose filesystem lives in this process's memory: no other process can write it.
_PROCESS_LOCAL_PROTOCOLS = frozenset({"memory"})


def _protocols(fs: Any) -> frozenset[str]:
    return frozenset({fs.protocol} if isinstance(fs.protocol, str) else fs.protocol)


def _conditional_store_class(fs: Any) -> type[CompareAndSwapStore] | None:
    """The store whose conditions this filesystem's server can enforce, if any."""
    protocols = _protocols(fs)
    if callable(getattr(fs, "_call_s3", None)):
        return S3Store
    if protocols & {"abfs", "az", "abfss"} and hasattr(fs, "service_client"):
        return AzureBlobStore
    if protocols & {"gs", "gcs"} and callable(getattr(fs, "_call", None)):
        return GcsStore
    return None


def _require_folder(source: Any) -> None:
    fs, home, location = source.fs, source.path, source.location
    fs.invalidate_cache(home)
    try:
        info = fs.info(home)
    except FileNotFoundError:
        raise location_error(FileNotFoundError, location, "no such persona home") from None
    except Exception as error:
        raise read_error(error, location, None) from error
    if info.get("type") == "file":
        raise source.not_a_folder()


def fsspec_store(source: Any, name: str = MEMORY_FILE, *, single_writer: bool = False) -> MemoryStore:
    """The store for ``name`` in an fsspec home (a resolved ``FsspecSource``): the one place
    that picks a write mechanism for a filesystem, or refuses.

    S3, Azure Blob and GCS get a compare-and-swap whose enforcement is probed before the first
    write (see :mod:`.probe`); ``memory://`` a lock in this process; any other filesystem is
    refused with :class:`BootstrapError` unless ``single_writer=True``. The home is looked up
    once, fresh: it must exist and be a folder (on S3, a prefix with objects).
    """
    _require_folder(source)
    if single_writer or _protocols(source.fs) & _PROCESS_LOCAL_PROTOCOLS:
        return FsspecStore(source, name)
    store_class = _conditional_store_class(source.fs)
    if store_class is not None:
        return store_class(source, name, probe=require_enforced)
    raise BootstrapError(
        f"cannot write {name} in {source.location} safely: {type(source.fs).__name__} offers no "
        "conditional write, so writers in other processes could silently overwrite each other's "
        "edits. If only one process ever writes this home, pass single_writer=True "
        "(CLI: --single-writer)."
    )
