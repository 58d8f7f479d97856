"""obstore's errors in the vocabulary every source and store speaks, mapped once. obstore
gives an HTTP status only in its messages; this module never imports obstore (an error can only
be obstore's once it was imported)."""

from __future__ import annotations

import errno
import re
import sys


def _obstore_errors(*names: str) -> tuple[type[BaseException], ...]:
    """obstore's exception classes by name; none if obstore was never imported."""
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
    """An obstore failure as :class:`FileNotFoundError`, :class:`PermissionError` or :class:`OSError`
    with a short message, other errors as they are (a 416 or a conflict is an answer: check first)."""
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
    """``cls`` with the server's answer (``HTTP 403 Forbidden``), else obstore's first line."""
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
    """A condition failed: the object exists (``mode="create"``) or is no longer the version
    named; S3 may answer a race of two conditional writes with 409."""
    if isinstance(error, _obstore_errors("AlreadyExistsError", "PreconditionError")):
        return True
    return object_store_status(error) in (409, 412)
