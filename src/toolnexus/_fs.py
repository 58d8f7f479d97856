"""Low file helpers for the sources (reading, freshness) and the stores (writing).

They live below both so that neither imports the other's internals.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Hashable

__all__ = ["is_empty_range_error", "read_capped", "stat_validator"]


def read_capped(fd: int, limit: int) -> tuple[bytes | None, int | None]:
    """Read at most ``limit + 1`` bytes of an open file: ``(data, size)``, or ``(None, None)`` when
    it is not a regular file. Bounded by ``fstat`` first: ``read(limit + 1)`` would preallocate."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None, None
    size = info.st_size
    want = (size if size < limit else limit) + 1
    expected = want if size > limit else size
    data = os.read(fd, want) if expected else b""
    while len(data) < expected:
        chunk = os.read(fd, want - len(data))
        if not chunk:
            break
        data += chunk
    return data, size


def is_empty_range_error(result: BaseException) -> bool:
    """A read of bytes ``[0, n)`` answered with HTTP 416: the object is empty. Each client spells
    it its own way: s3fs raises ``OSError(EINVAL, "…not satisfiable")``; azure-storage-blob an
    error with ``status_code`` 416 (``InvalidRange``); aiohttp (HTTP) ``status``, gcsfs ``code``."""
    if isinstance(result, OSError) and result.errno == errno.EINVAL and "satisfiable" in str(result):
        return True
    return any(getattr(result, field, None) == 416 for field in ("status_code", "status", "code"))


def stat_validator(info: os.stat_result, trusted_before_ns: int) -> Hashable | None:
    """The stat that proves a local file unchanged — ``(inode, device, size, mtime_ns, ctime_ns)``
    — or ``None`` while it changed too recently (at or after ``trusted_before_ns``) to trust."""
    if info.st_mtime_ns >= trusted_before_ns or info.st_ctime_ns >= trusted_before_ns:
        return None
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
