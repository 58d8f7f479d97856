"""The bytes of a bundle, pure: same names and bytes in, same zip or tar out (fixed timestamps,
modes, owners and compression; the gzip header written here, as :mod:`gzip` records the machine)."""

from __future__ import annotations

import bz2
import calendar
import io
import lzma
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Mapping

from toolnexus.composer.rules import BOOTSTRAP_ORDER

__all__ = [
    "BUNDLE_DATE_TIME",
    "BUNDLE_FORMATS",
    "BUNDLE_MTIME",
    "bundle_bytes",
    "canonical_format",
    "format_for",
    "named_format",
]

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


def named_format(path: str) -> str | None:
    lower = path.lower()
    matches = [suffix for suffix in _SUFFIXES if lower.endswith(suffix)]
    return _SUFFIXES[max(matches, key=len)] if matches else None


def format_for(path: str, asked: str | None = None) -> str:
    """``asked`` if given, else what the name says, else zip; ``asked`` may not contradict the
    name (the reader decides by the name, so the bundle would not read back)."""
    named = named_format(path)
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
            info.size, info.mtime, info.mode = len(files[name]), BUNDLE_MTIME, _MEMBER_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
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
