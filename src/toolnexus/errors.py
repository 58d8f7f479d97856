"""The one domain error, and the one place that turns a backend failure into a clear one: every
message names the location and the file, so a failed read never passes for a missing section."""

from __future__ import annotations

import errno as errno_codes

from toolnexus._object_store import object_store_error


class BootstrapError(OSError):
    """A persona home or bundle could not be composed for a reason no built-in error describes
    (a corrupt bundle, an escaping symlink, an unreadable file); an :class:`OSError`, so
    ``except OSError`` still catches every storage failure."""


def describe(location: str, name: str | None = None) -> str:
    """``"USER.md in s3://bucket/aster"`` — the subject every message starts from."""
    return f"{name} in {location}" if name else location


def _build(cls: type[OSError], message: str, code: int | None) -> OSError:
    """An OSError whose ``str()`` is exactly ``message`` but which still carries ``errno``."""
    error = cls(message)
    error.errno = code
    return error


def detail(cause: BaseException) -> str:
    """What went wrong, never blank: an exception's own text, else its type (and, if it wraps
    one, its cause's) — ``FSTimeoutError`` says nothing in ``str()``, but its name does."""
    text = str(cause)
    if text:
        return text
    inner = cause.__cause__ or cause.__context__
    if inner is None or inner is cause:
        return type(cause).__name__
    inner_text = f": {inner}" if str(inner) else ""
    return f"{type(cause).__name__} (caused by {type(inner).__name__}{inner_text})"


def read_error(cause: BaseException, location: str, name: str | None, *, action: str = "read") -> OSError:
    """The error the caller sees (raise it ``from cause``) for a failure to read (or ``action``)
    ``name``: access denied stays a :class:`PermissionError`, anything else is a
    :class:`BootstrapError`; a client's own errors are mapped first (obstore's)."""
    cause = object_store_error(cause)
    if isinstance(cause, BootstrapError):
        return cause
    subject = describe(location, name)
    if isinstance(cause, PermissionError):
        message = f"cannot {action} {subject}: permission denied ({detail(cause)})"
        return _build(PermissionError, message, errno_codes.EACCES)
    code = cause.errno if isinstance(cause, OSError) else None
    return _build(BootstrapError, f"cannot {action} {subject}: {detail(cause)}", code)


def location_error(cls: type[OSError], location: str, reason: str, code: int | None = None) -> OSError:
    """An error about the home itself (missing, not a directory, not a bundle)."""
    return _build(cls, f"{location}: {reason}", code)
