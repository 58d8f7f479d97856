"""Before a store trusts its server's conditional writes, check once, on a fresh object of its own,
that the server enforces them: some ignore them (s3rver's ``If-Match``, gcp-storage-emulator's
``ifGenerationMatch``, fake-gcs-server's conditional delete). Verdicts are kept per server, bucket
and check for the process; a failure to *run* a probe is raised, not kept."""

from __future__ import annotations

import contextlib
import errno
import logging
import secrets
from functools import partial

from toolnexus.errors import BootstrapError, read_error
from toolnexus.stores.base import CompareAndSwapStore, process_lock

_log = logging.getLogger(__name__)

#: ``None`` (enforced) or the reason, per ``(*store.server_key(), check)``.
_verdicts: dict[tuple[str, ...], str | None] = {}

#: What each check guards, for its refusal: the edit, what could go wrong, the first way out.
_REFUSALS = {
    "writes": (
        "write",
        "an edit could be silently overwritten by another writer",
        "Use a server that enforces them",
    ),
    "deletes": (
        "rename",
        "an edit made during the rename could be lost",
        "Create the new file and delete the old one instead",
    ),
}


def forget_verdicts() -> None:
    """Forget every probe verdict (tests, or after a server was reconfigured)."""
    _verdicts.clear()


def refusal(store: CompareAndSwapStore, reason: str, check: str = "writes") -> BootstrapError:
    """The error for a server that ignores the conditions: why, and the two ways out."""
    edit, danger, way_out = _REFUSALS[check]
    error = BootstrapError(
        f"cannot {edit} {store.name} in {store.location} safely: the server does not enforce "
        f"conditional {check} ({reason}), so {danger}. {way_out}, or pass single_writer=True "
        "(CLI: --single-writer) if only one process ever writes this home."
    )
    error.errno = errno.EOPNOTSUPP
    return error


def _require(store: CompareAndSwapStore, check: str) -> None:
    """Raise unless the server enforces ``check``, probed once per server and bucket (concurrent
    callers wait for the first)."""
    key = (*store.server_key(), check)
    with process_lock(key):
        if key not in _verdicts:
            _verdicts[key] = _probe(store, check)
        reason = _verdicts[key]
    if reason is not None:
        raise refusal(store, reason, check)


#: The probes a store is handed: conditional writes (every store), conditional deletes (renames).
require_enforced = partial(_require, check="writes")
require_conditional_delete = partial(_require, check="deletes")


def _probe(store: CompareAndSwapStore, check: str) -> str | None:
    """Create a fresh probe object, run ``check`` (writes or deletes) on it, delete it: the reason
    the server failed, or None. Its own bytes already there are this very create, its answer lost."""
    path = store.home.path_of(f".toolnexus-probe-{secrets.token_hex(8)}")
    data = b"toolnexus conditional-write probe\n"
    try:
        if not store.put(path, data, None) and store.get(path)[0] != data:
            raise BootstrapError(f"{path}: a freshly named probe object already exists")
        must_not_exist, must_match = store.conditions
        if check == "deletes":  # a delete at a version the object cannot have
            try:
                deleted = store.delete_if(path, store.stale_version)
            except NotImplementedError as missing:
                return str(missing) or f"{type(store).__name__} has no delete_if"
            return f"it let a delete at a stale {must_match} remove an object" if deleted else None
        # a second must-not-exist write, then one at a version the object cannot have
        if store.put(path, b"overwritten despite the condition\n", None):
            return f"it let {must_not_exist} overwrite an existing object"
        if store.put(path, b"overwritten despite a stale version\n", store.stale_version):
            return f"it let a stale {must_match} overwrite an object"
        return None
    except Exception as error:
        raise read_error(error, store.location, store.name, action="write") from error
    finally:
        try:
            store.delete(path)
        except Exception as error:  # a stray probe object is litter, not damage: say so, go on
            _log.warning("could not delete the probe object %s: %s", path, error)
        with contextlib.suppress(Exception):
            store.fs.invalidate_cache(path)
