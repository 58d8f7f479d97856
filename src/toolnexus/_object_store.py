"""obstore's errors in the vocabulary every source and store already speaks: mapped here, once.

obstore (Rust ``object_store``) raises its own exception classes and gives an HTTP status only in
its messages; the sources (``sources/obstore*.py``) and the store (``stores/obstore.py``) of the
obstore engine, and :func:`toolnexus.errors.read_error`, all go through these functions. They never
import obstore: an error can only be obstore's once obstore was imported.
"""

from __future__ import annotations

import errno
import re
import sys

__all__ = ["is_conflict", "object_store_error", "object_store_status"]


def _obstore_errors(*names: str) -> tuple[type[BaseException], ...]:
    """obstore's exception classes by name; none if obstore was never imported (then no error
    can be one of them), so this module never imports the optional package."""
    module = sys.modules.get("obstore.exceptions")
    return tuple(getattr(module, name) for name in names if hasattr(module, name)) if module else ()


#: How obstore (Rust ``object_store``) reports an HTTP status: only inside its message.
_STATUS = re.compile(r"returned non-2xx status code: (\d{3})")


def object_store_status(error: BaseException) -> int | None:
    """The HTTP status behind an obstore error, when its message names one."""
    if not isinstance(error, _obstore_errors("BaseError")):
        return None
    found = _STATUS.search(str(error))
    return int(found.group(1)) if found else None


def object_store_error(error: BaseException) -> BaseException:
    """obstore's errors in the vocabulary every source and store already speaks — the one place
    they are mapped: a missing object is a :class:`FileNotFoundError` (obstore ≥ 0.12 raises that
    itself; earlier versions their own ``NotFoundError``), refused credentials or access a
    :class:`PermissionError`, any other failure an :class:`OSError`; each with a short message
    (the server's status, or obstore's first line: no debug dump, no XML body). Other errors are
    returned as they are. Check :func:`is_empty_range_error` and :func:`is_conflict` first: they
    are answers, not failures."""
    if isinstance(error, _obstore_errors("NotFoundError")) or (
        isinstance(error, FileNotFoundError) and _STATUS.search(str(error))  # obstore ≥ 0.12's own
    ):
        return _mapped(FileNotFoundError, errno.ENOENT, error)
    denied = _obstore_errors("PermissionDeniedError", "UnauthenticatedError")
    if isinstance(error, denied) or object_store_status(error) in (401, 403):
        return _mapped(PermissionError, errno.EACCES, error)
    if isinstance(error, _obstore_errors("BaseError")):
        return _mapped(OSError, None, error)
    return error


def _mapped(cls: type[OSError], code: int | None, cause: BaseException) -> OSError:
    """``cls`` with a short message: the server's answer (``HTTP 403 Forbidden``) where obstore
    names one — the file and location are the caller's to say — else obstore's first line."""
    text = str(cause).split("\n", 1)[0]
    status = _STATUS.search(text)
    if status is not None:
        reason = text[status.end() :].split(":", 1)[0].strip()
        text = f"HTTP {status.group(1)} {reason}".rstrip()
    mapped = cls(text)
    mapped.errno = code
    mapped.__cause__ = cause
    return mapped


def is_conflict(error: BaseException) -> bool:
    """obstore's answer to a conditional write or read whose condition failed: the object exists
    (``mode="create"``) or is no longer the version named (an ETag or generation). S3 may also
    answer a race between two conditional writes with 409 ``ConditionalRequestConflict``."""
    if isinstance(error, _obstore_errors("AlreadyExistsError", "PreconditionError")):
        return True
    return object_store_status(error) in (409, 412)
