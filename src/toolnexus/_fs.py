"""Low file helpers for the sources (reading, freshness) and the stores (writing): below both,
so that neither imports the other's internals."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from toolnexus._object_store import object_store_status

#: How many folder levels below a listed folder are walked (a bound against hostile trees).
FOLDER_DEPTH = 8

#: Opening a folder (the home itself may be reached through a symlink), and one below it (never).
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_FOLDER_FLAGS = DIR_FLAGS | getattr(os, "O_NOFOLLOW", 0)
#: Opening a file to read it: never a symlink, never blocking on a FIFO.
FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


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
    """A read of bytes ``[0, n)`` answered with HTTP 416: the object is empty. s3fs says so with
    ``EINVAL``, azure ``status_code``, aiohttp ``status``, gcsfs ``code``, obstore its message."""
    if isinstance(result, OSError) and result.errno == errno.EINVAL and "satisfiable" in str(result):
        return True
    if any(getattr(result, field, None) == 416 for field in ("status_code", "status", "code")):
        return True
    return object_store_status(result) == 416


def stat_validator(info: os.stat_result, trusted_before_ns: int) -> Hashable | None:
    """The stat that proves a local file unchanged — ``(inode, device, size, mtime_ns, ctime_ns)``
    — or ``None`` while it changed too recently (at or after ``trusted_before_ns``) to trust."""
    if info.st_mtime_ns >= trusted_before_ns or info.st_ctime_ns >= trusted_before_ns:
        return None
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def is_hidden(relative: str) -> bool:
    """A path with a hidden segment (``.name``: temporary files, probe objects) or an empty one."""
    return any(not part or part.startswith(".") for part in relative.split("/"))


def open_folders(root_fd: int, parts: Sequence[str], *, create: bool = False) -> list[int] | None:
    """The descriptors of each folder of ``parts`` below ``root_fd`` (the caller closes them), never
    through a symlink; ``None`` when one is missing, unless ``create`` makes it."""
    fds: list[int] = []
    try:
        for index, part in enumerate(parts):
            current = fds[-1] if fds else root_fd
            try:
                fds.append(os.open(part, _FOLDER_FLAGS, dir_fd=current))
                continue
            except FileNotFoundError:
                if not create:
                    for fd in fds:
                        os.close(fd)
                    return None
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/".join(parts[: index + 1])
                    raise NotADirectoryError(
                        errno.ENOTDIR, f"{where} is a symlink or a file, not a folder"
                    ) from None
                raise
            with contextlib.suppress(FileExistsError):  # made meanwhile: open it like any other
                os.mkdir(part, 0o777, dir_fd=current)
            fds.append(os.open(part, _FOLDER_FLAGS, dir_fd=current))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def local_files(root: str, folder: str) -> Iterator[tuple[str, int, str]]:
    """Every regular file below ``root/folder`` as ``(path relative to root, folder fd valid until
    the next item, name)``: no symlink, no hidden name, :data:`FOLDER_DEPTH` levels at most."""
    try:
        root_fd = os.open(root, DIR_FLAGS)
    except FileNotFoundError:
        return
    try:
        fds = open_folders(root_fd, folder.split("/"))
        if fds is None:
            return
        for fd in fds[:-1]:
            os.close(fd)
        yield from _walk(fds[-1], folder, FOLDER_DEPTH)
    finally:
        os.close(root_fd)


def read_local_files(
    root: str, folder: str, limit: int, match: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, bytes, int | None]]:
    """``(path, first limit + 1 bytes, size)`` of each file :func:`local_files` lists that ``match``
    accepts (one gone or a symlink meanwhile skipped); a failure carries the path as ``filename``."""
    for path, dir_fd, name in local_files(root, folder):
        if match is not None and not match(path[len(folder) + 1 :]):
            continue
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.EMLINK):
                continue  # a symlink: never one of a folder's files
            error.filename = path
            raise
        try:
            data, size = read_capped(fd, limit)
        except OSError as error:
            error.filename = path
            raise
        finally:
            os.close(fd)
        if data is not None:
            yield path, data, size


def _walk(fd: int, prefix: str, depth: int) -> Iterator[tuple[str, int, str]]:
    """Yield the files of the folder ``fd`` (closed at the end), then recurse into its folders."""
    try:
        with os.scandir(fd) as scan:
            entries = sorted(
                (entry.name, entry.is_dir(follow_symlinks=False), entry.is_file(follow_symlinks=False))
                for entry in scan
            )
        for name, is_dir, is_file in entries:
            if name.startswith("."):
                continue
            if is_file:
                yield f"{prefix}/{name}", fd, name
            elif is_dir and depth > 0:
                try:
                    child = os.open(name, _FOLDER_FLAGS, dir_fd=fd)
                except (FileNotFoundError, NotADirectoryError):
                    continue  # removed or replaced meanwhile
                yield from _walk(child, f"{prefix}/{name}", depth - 1)
    finally:
        os.close(fd)


def fsspec_files(fs: Any, folder_path: str) -> dict[str, int]:
    """``{path relative to it: size}`` of every file below ``folder_path``, freshly listed,
    hidden names skipped; a missing folder is empty."""
    fs.invalidate_cache(folder_path)
    try:
        found = fs.find(folder_path, detail=True)
    except FileNotFoundError:
        return {}
    prefix = folder_path.rstrip("/") + "/"
    files: dict[str, int] = {}
    for path, info in found.items():
        relative = str(path)[len(prefix) :] if str(path).startswith(prefix) else ""
        if info.get("type") == "file" and relative and not is_hidden(relative):
            files[relative] = int(info.get("size") or 0)
    return files
