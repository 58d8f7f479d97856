"""Before a store trusts its server's conditional writes, check once that the server enforces them.

Some servers accept the condition headers and ignore them (s3rver for S3's ``If-Match``,
gcp-storage-emulator for GCS's ``ifGenerationMatch``): a compare-and-swap that trusted them would
answer "ok" to edits that another writer then silently overwrites. The probe works only on an
object of its own — a new, uniquely named ``.toolnexus-probe-<random>`` in the home — so it can
never touch anyone's data:

1. create it with the must-not-exist condition (must succeed);
2. create it again with the same condition (must be refused);
3. write it against a version it cannot have (must be refused);
4. delete it, whatever happened.

The verdict is kept per server (filesystem options) and bucket for the life of the process; a
failure to *run* the probe (network, permissions) is raised and not remembered.

A rename on an object store (a topic file's) is a copy and then a delete conditional on the
version copied; before the first rename per bucket and process, :func:`require_conditional_delete`
checks the same way that the server refuses a delete at a stale version (fake-gcs-server does
not). Where it does not, renames are refused: an edit made between the copy and the delete
could be lost.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import secrets
import threading
from collections.abc import Callable

from toolnexus.errors import BootstrapError
from toolnexus.stores.base import CompareAndSwapStore, storage_error
from toolnexus.stores.lineage import Stored

__all__ = ["forget_verdicts", "require_conditional_delete", "require_enforced"]

_log = logging.getLogger(__name__)

#: Verdicts per ``store.server_key()`` (client class, options token, bucket): ``None``
#: enforced, else the reason.
_verdicts: dict[tuple[str, str, str], str | None] = {}
_verdicts_guard = threading.Lock()
_probe_locks: dict[tuple[str, ...], threading.Lock] = {}
#: The same for conditional deletes.
_delete_verdicts: dict[tuple[str, str, str], str | None] = {}


def forget_verdicts() -> None:
    """Forget every probe verdict (tests, or after a server was reconfigured)."""
    with _verdicts_guard:
        _verdicts.clear()
        _delete_verdicts.clear()


def _verdict(
    store: CompareAndSwapStore,
    verdicts: dict[tuple[str, str, str], str | None],
    probe: Callable[[CompareAndSwapStore], str | None],
) -> str | None:
    """The remembered verdict for the store's server and bucket, probing once if there is none."""
    key = store.server_key()
    with _verdicts_guard:
        lock = _probe_locks.setdefault((*key, probe.__name__), threading.Lock())
    with lock:
        if key not in verdicts:
            verdicts[key] = probe(store)
        return verdicts[key]


def require_enforced(store: CompareAndSwapStore) -> None:
    """Return if the store's server enforces its conditions; raise :class:`BootstrapError` if not."""
    reason = _verdict(store, _verdicts, _probe)
    if reason is not None:
        raise refusal(store, reason)


def require_conditional_delete(store: CompareAndSwapStore) -> None:
    """Return if the store's server refuses a delete at a stale version; raise if it does not."""
    reason = _verdict(store, _delete_verdicts, _probe_delete)
    if reason is not None:
        raise _unsupported(
            f"cannot rename {store.name} in {store.location} safely: the server does not enforce "
            f"conditional deletes ({reason}), so an edit made during the rename could be lost. Create "
            "the new file and delete the old one instead, or pass single_writer=True (CLI: "
            "--single-writer) if only one process ever writes this home."
        )


def _probe_delete(store: CompareAndSwapStore) -> str | None:
    """Create a probe object, delete it at a version it cannot have, and see whether it survived."""
    probe = store.home.path_of(f".toolnexus-probe-{secrets.token_hex(8)}")
    try:
        _create(store, probe, b"toolnexus conditional-delete probe\n")
        deleted = store.delete_if(probe, store.stale_version)
    except NotImplementedError as missing:
        return str(missing) or f"{type(store).__name__} has no delete_if"
    except Exception as error:
        raise storage_error(error, store.location, store.name, "write") from error
    finally:
        with contextlib.suppress(Exception):
            store.delete(probe)
            store.forget(probe)
    return f"it let a delete at a stale {store.conditions[1]} remove an object" if deleted else None


def refusal(store: CompareAndSwapStore, reason: str) -> BootstrapError:
    """The error for a server that ignores the conditions: why, and the two ways out."""
    return _unsupported(
        f"cannot write {store.name} in {store.location} safely: the server does not enforce "
        f"conditional writes ({reason}), so an edit could be silently overwritten by another "
        "writer. Use a server that enforces them, or pass single_writer=True (CLI: --single-writer) "
        "if only one process ever writes this home."
    )


def _unsupported(message: str) -> BootstrapError:
    error = BootstrapError(message)
    error.errno = errno.EOPNOTSUPP
    return error


def _create(store: CompareAndSwapStore, probe: str, data: bytes) -> None:
    """Create the probe object. Its name is fresh, so the same bytes already there are this very
    create, landed on an attempt whose answer was lost (the SDK retried, and the retry met
    ``If-None-Match``); anything else there is an error."""
    if store.put(probe, data, None):
        return
    got = store.get(probe)
    if (got.data if isinstance(got, Stored) else got[0]) != data:
        raise BootstrapError(f"{probe}: a freshly named probe object already exists")


def _probe(store: CompareAndSwapStore) -> str | None:
    """Run the four steps of the module docstring; the reason the server failed, or None."""
    probe = store.home.path_of(f".toolnexus-probe-{secrets.token_hex(8)}")
    must_not_exist, must_match = store.conditions
    try:
        _create(store, probe, b"toolnexus conditional-write probe\n")
    except Exception as error:
        raise storage_error(error, store.location, store.name, "write") from error
    try:
        if store.put(probe, b"overwritten despite the condition\n", None):
            return f"it let {must_not_exist} overwrite an existing object"
        if store.put(probe, b"overwritten despite a stale version\n", store.stale_version):
            return f"it let a stale {must_match} overwrite an object"
        return None
    except Exception as error:
        raise storage_error(error, store.location, store.name, "write") from error
    finally:
        try:
            store.delete(probe)
        except Exception as error:  # a stray probe object is litter, not damage: say so, go on
            _log.warning("could not delete the probe object %s: %s", probe, error)
        with contextlib.suppress(Exception):
            store.forget(probe)
