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
"""

from __future__ import annotations

import contextlib
import errno
import logging
import secrets
import threading

from toolnexus.errors import BootstrapError
from toolnexus.stores.base import CompareAndSwapStore, storage_error

__all__ = ["forget_verdicts", "require_enforced"]

_log = logging.getLogger(__name__)

#: Verdicts per (filesystem class, filesystem token, bucket): ``None`` enforced, else the reason.
_verdicts: dict[tuple[str, str, str], str | None] = {}
_verdicts_guard = threading.Lock()
_probe_locks: dict[tuple[str, str, str], threading.Lock] = {}


def _server_key(store: CompareAndSwapStore) -> tuple[str, str, str]:
    token = str(getattr(store.fs, "_fs_token", id(store.fs)))  # fsspec's hash of the fs's options
    return type(store.fs).__qualname__, token, store.bucket()


def forget_verdicts() -> None:
    """Forget every probe verdict (tests, or after a server was reconfigured)."""
    with _verdicts_guard:
        _verdicts.clear()


def require_enforced(store: CompareAndSwapStore) -> None:
    """Return if the store's server enforces its conditions; raise :class:`BootstrapError` if not."""
    key = _server_key(store)
    with _verdicts_guard:
        lock = _probe_locks.setdefault(key, threading.Lock())
    with lock:
        if key not in _verdicts:
            _verdicts[key] = _probe(store)
        reason = _verdicts[key]
    if reason is not None:
        raise refusal(store, reason)


def refusal(store: CompareAndSwapStore, reason: str) -> BootstrapError:
    """The error for a server that ignores the conditions: why, and the two ways out."""
    error = BootstrapError(
        f"cannot write {store.name} in {store.location} safely: the server does not enforce "
        f"conditional writes ({reason}), so an edit could be silently overwritten by another "
        "writer. Use a server that enforces them, or pass single_writer=True (CLI: --single-writer) "
        "if only one process ever writes this home."
    )
    error.errno = errno.EOPNOTSUPP
    return error


def _probe(store: CompareAndSwapStore) -> str | None:
    """Run the four steps of the module docstring; the reason the server failed, or None."""
    probe = store.home.path_of(f".toolnexus-probe-{secrets.token_hex(8)}")
    must_not_exist, must_match = store.conditions
    try:
        if not store.put(probe, b"toolnexus conditional-write probe\n", None):
            raise BootstrapError(f"{probe}: a freshly named probe object already exists")
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
            store.fs.invalidate_cache(probe)
