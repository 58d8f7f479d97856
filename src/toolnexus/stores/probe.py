"""Before a store trusts its server's conditional writes, check once that the server enforces them.

Some servers accept the condition headers and ignore them (s3rver's ``If-Match``,
gcp-storage-emulator's ``ifGenerationMatch``). The probe works on a fresh object of its own
(``.toolnexus-probe-<random>``, so it never touches anyone's data): create it must-not-exist
(must succeed), again (must be refused), write it at a version it cannot have (must be refused),
delete it. Renames (a copy, then a delete at the version copied) are checked the same way
(:func:`require_conditional_delete`: fake-gcs-server ignores that condition). Verdicts are kept
per server and bucket for the process; a failure to *run* a probe is raised, not kept.
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

#: Verdicts per ``store.server_key()``: ``None`` enforced, else the reason.
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
    key = store.server_key()
    with _verdicts_guard:
        lock = _probe_locks.setdefault((*key, probe.__name__), threading.Lock())
    with lock:
        if key not in verdicts:
            verdicts[key] = probe(store)
        return verdicts[key]


def require_enforced(store: CompareAndSwapStore) -> None:
    """Raise :class:`BootstrapError` unless the store's server enforces its conditions."""
    reason = _verdict(store, _verdicts, _probe)
    if reason is not None:
        raise refusal(store, reason)


def require_conditional_delete(store: CompareAndSwapStore) -> None:
    """Raise unless the store's server refuses a delete at a stale version."""
    reason = _verdict(store, _delete_verdicts, _probe_delete)
    if reason is not None:
        raise _unsupported(
            f"cannot rename {store.name} in {store.location} safely: the server does not enforce "
            f"conditional deletes ({reason}), so an edit made during the rename could be lost. Create "
            "the new file and delete the old one instead, or pass single_writer=True (CLI: "
            "--single-writer) if only one process ever writes this home."
        )


def _probe_delete(store: CompareAndSwapStore) -> str | None:
    """Create a probe object, delete it at a version it cannot have: did it survive?"""
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
    """Create the probe object; its name is fresh, so its own bytes already there are this very
    create, whose answer was lost (the SDK's retry met ``If-None-Match``)."""
    if store.put(probe, data, None):
        return
    got = store.get(probe)
    if (got.data if isinstance(got, Stored) else got[0]) != data:
        raise BootstrapError(f"{probe}: a freshly named probe object already exists")


def _probe(store: CompareAndSwapStore) -> str | None:
    """The module's four steps: the reason the server failed, or None."""
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
