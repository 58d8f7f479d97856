"""Write a home as a reproducible zip or tar bundle, every file copied whole (up to
:data:`MAX_BUNDLE_MEMBER_BYTES`), so ``compose_soul(out) == compose_soul(home)``. The bytes are
pure: same names and bytes in, same archive out (fixed timestamps, modes, owners and
compression; the gzip header written here, as :mod:`gzip` records the machine)."""

from __future__ import annotations

import bz2
import calendar
import errno
import io
import lzma
import os
import stat
import struct
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from toolnexus.composer.rules import BOOTSTRAP_ORDER
from toolnexus.errors import BootstrapError, describe, location_error
from toolnexus.sources import DEFAULT_ENGINE, Location, SourceBase, is_url, resolve, resolve_output

#: Every zip member's timestamp: the earliest a zip can store, so the archive never depends on mtimes.
BUNDLE_DATE_TIME = (1980, 1, 1, 0, 0, 0)
#: Every tar member's mtime: the same instant as :data:`BUNDLE_DATE_TIME`, in seconds since the epoch.
BUNDLE_MTIME = calendar.timegm((*BUNDLE_DATE_TIME, 0, 0, 0))

#: Format names ``write_bundle`` and ``toolnexus bundle --format`` take, and what each means.
BUNDLE_FORMATS: dict[str, str] = {
    "zip": "zip",
    "tar": "tar",
    "tar.gz": "tar.gz",
    "tgz": "tar.gz",
    "tar.bz2": "tar.bz2",
    "tbz2": "tar.bz2",
    "tar.xz": "tar.xz",
    "txz": "tar.xz",
}

#: File name endings that name a format (longest match wins, so ``.tar.gz`` is not ``.gz``).
_SUFFIXES = {f".{name}": format for name, format in BUNDLE_FORMATS.items()} | {".tbz": "tar.bz2"}

_UNIX_CREATOR = 3
_MEMBER_MODE = 0o644
_GZIP_OS_UNKNOWN = 255
_GZIP_BEST = 2  # the "extra flags" byte for level 9


def canonical_format(name: str) -> str:
    try:
        return BUNDLE_FORMATS[name.lower()]
    except KeyError:
        known = ", ".join(BUNDLE_FORMATS)
        raise ValueError(f"unknown bundle format {name!r} (choose from {known})") from None


def format_for(path: str, asked: str | None = None) -> str:
    """``asked`` if given, else what the name says, else zip; ``asked`` may not contradict the
    name (the reader decides by the name, so the bundle would not read back)."""
    matches = [suffix for suffix in _SUFFIXES if path.lower().endswith(suffix)]
    named = _SUFFIXES[max(matches, key=len)] if matches else None
    if asked is None:
        return named or "zip"
    wanted = canonical_format(asked)
    if named is not None and named != wanted:
        raise ValueError(
            f"{path}: the name says a {named} bundle but the format asked is {asked}; "
            "name the file for its format, or leave the format out"
        )
    return wanted


def member_order(name: str) -> tuple[int, str]:
    """Bootstrap files in :data:`BOOTSTRAP_ORDER`, then any other (``memory/…``) by path."""
    return (BOOTSTRAP_ORDER.index(name), "") if name in BOOTSTRAP_ORDER else (len(BOOTSTRAP_ORDER), name)


def _zip(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(files, key=member_order):
            info = zipfile.ZipInfo(name, date_time=BUNDLE_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = _UNIX_CREATOR
            info.external_attr = (stat.S_IFREG | _MEMBER_MODE) << 16
            archive.writestr(info, files[name], compresslevel=9)
    return buffer.getvalue()


def _tar(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name in sorted(files, key=member_order):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), BUNDLE_MTIME, _MEMBER_MODE  # owner: 0, ""
            archive.addfile(info, io.BytesIO(files[name]))
    return buffer.getvalue()


def _gzip(data: bytes) -> bytes:
    header = struct.pack("<BBBBIBB", 0x1F, 0x8B, 8, 0, 0, _GZIP_BEST, _GZIP_OS_UNKNOWN)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = compressor.compress(data) + compressor.flush()
    return header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "tar": lambda data: data,
    "tar.gz": _gzip,
    "tar.bz2": lambda data: bz2.compress(data, 9),
    "tar.xz": lambda data: lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64),
}


def bundle_bytes(files: Mapping[str, bytes], format: str = "zip") -> bytes:
    """The reproducible archive of ``files`` in ``format`` (a key of :data:`BUNDLE_FORMATS`)."""
    wanted = canonical_format(format)
    if wanted == "zip":
        return _zip(files)
    return _COMPRESSORS[wanted](_tar(files))


#: Largest bootstrap file copied into a bundle (32 times the composition cap).
MAX_BUNDLE_MEMBER_BYTES = 64 * 1024 * 1024

#: Folders copied whole after the bootstrap files: the topic files and the Agent Skills.
CARRIED_FOLDERS = ("memory", "skills", ".agents/skills")


def _read_home(source: SourceBase) -> dict[str, bytes]:
    reading = source.read_entries(BOOTSTRAP_ORDER, MAX_BUNDLE_MEMBER_BYTES)
    folders = [source.read_folder(folder, MAX_BUNDLE_MEMBER_BYTES).entries for folder in CARRIED_FOLDERS]
    files: dict[str, bytes] = {}
    for name, entry in [*reading.entries.items(), *(item for folder in folders for item in folder.items())]:
        if entry.data is None:
            continue  # not a regular file: compose skips it, so the bundle does too
        if len(entry.data) > MAX_BUNDLE_MEMBER_BYTES:
            raise BootstrapError(
                f"{describe(reading.location, name)} is over {MAX_BUNDLE_MEMBER_BYTES} bytes, "
                "too large to bundle"
            )
        files[name] = entry.data
    return files


def _refuse_existing(out: str) -> OSError:
    return location_error(
        FileExistsError, out, "already exists (pass force=True to replace it)", errno.EEXIST
    )


@contextmanager
def naming(out: str, what: str) -> Iterator[None]:
    """Our own I/O on ``out``: an :class:`OSError` names it (a refusal to replace one already does)."""
    try:
        yield
    except FileExistsError:
        raise
    except OSError as error:
        reason = f"cannot write the {what} ({error.strerror or error})"
        raise location_error(type(error), out, reason, error.errno) from error


@contextmanager
def written_whole(
    path: str, *, exclusive: bool = False, guard: Callable[[], AbstractContextManager[None]] = nullcontext
) -> Iterator[Callable[[bytes], None]]:
    """A ``write(data)`` whose bytes become the local file ``path`` when the block ends without error,
    never half of them: a synced temp file beside it, renamed over it (``exclusive``: hard-linked, which
    fails on a file that appeared meanwhile). ``guard`` wraps our own I/O, not the block's."""
    directory = os.path.dirname(os.path.abspath(path))
    with guard():
        fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:

            def write(data: bytes) -> None:
                with guard():
                    stream.write(data)

            yield write
            with guard():
                stream.flush()
                os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        with guard():
            os.chmod(temp, 0o666 & ~umask)  # what open(path, "w") would have made, not mkstemp's 0o600
            (_link if exclusive else os.replace)(temp, path)
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


def _link(temp: str, path: str) -> None:
    """Fails on a file that appeared since (checking, then replacing, would race)."""
    try:
        os.link(temp, path)
    except FileExistsError:
        raise _refuse_existing(path) from None
    except OSError:  # no hard links here
        if os.path.lexists(path):
            raise _refuse_existing(path) from None
        os.replace(temp, path)


def _write_remote(fs: Any, path: str, data: bytes, force: bool, location: str) -> None:
    """One ``pipe_file`` — a single PUT on object stores, which is atomic there."""
    if not force:
        fs.invalidate_cache(path)  # s3fs may hold a stale listing; decide on a fresh lookup
        if fs.exists(path):
            raise _refuse_existing(location)
    fs.pipe_file(path, data)


def write_bundle(
    home: Location,
    out: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    force: bool = False,
    follow_external_symlinks: bool = False,
    format: str | None = None,
    engine: str = DEFAULT_ENGINE,
) -> list[str]:
    """Write ``home``'s bootstrap files, then its topic files and skills, to the bundle ``out``;
    returns the names written, in :data:`BOOTSTRAP_ORDER` then by path.

    ``out``'s name says the archive (``.tar``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``…, else a zip);
    ``format`` (a key of :data:`BUNDLE_FORMATS`) says it for a name that does not, never against one
    that does. ``home`` is anything :func:`compose_soul` takes (``fs=`` applies to it), ``out`` a local
    path or a single URL; ``storage_options`` go to both (keyed by protocol where they differ). An
    existing ``out`` is a :class:`FileExistsError` unless ``force=True``; a failed write raises an
    :class:`OSError` naming ``out``, leaving nothing behind."""
    out_path = os.fspath(out)
    kind = format_for(out_path, format)
    out_is_url = is_url(out_path)
    home_is_url = fs is None and is_url(home)
    if storage_options and not (out_is_url or home_is_url):
        raise TypeError(f"storage_options cannot apply: neither {home!r} nor {out_path!r} is a URL")
    out_fs, out_fs_path = resolve_output(out_path, storage_options if out_is_url else None, engine)
    if out_fs is None:
        out_path = out_fs_path
    options = storage_options if home_is_url else None
    follow = follow_external_symlinks
    files = _read_home(
        resolve(home, storage_options=options, fs=fs, follow_external_symlinks=follow, engine=engine)
    )
    data = bundle_bytes(files, kind)
    with naming(out_path, "bundle"):
        if out_fs is None:
            with written_whole(out_path, exclusive=not force) as write:
                write(data)
        else:
            _write_remote(out_fs, out_fs_path, data, force, out_path)
    return sorted(files, key=member_order)
