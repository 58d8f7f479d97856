"""Write a home as a reproducible zip or tar bundle, every file copied whole (up to
:data:`MAX_BUNDLE_MEMBER_BYTES`), so ``compose_soul(out) == compose_soul(home)``."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from toolnexus.composer.rules import BOOTSTRAP_ORDER
from toolnexus.errors import BootstrapError, describe, location_error
from toolnexus.soul.archives import BUNDLE_DATE_TIME, BUNDLE_FORMATS, bundle_bytes, format_for, member_order
from toolnexus.sources import DEFAULT_ENGINE, Location, SourceBase, is_url, resolve, resolve_output

__all__ = ["BUNDLE_DATE_TIME", "BUNDLE_FORMATS", "MAX_BUNDLE_MEMBER_BYTES", "bundle_bytes", "write_bundle"]

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


def _write_local(path: str, data: bytes, force: bool) -> None:
    """Temp file next to ``path`` then a rename, so readers never see half an archive; without
    ``force`` a hard link, which fails on a file that appeared meanwhile (else check-then-replace)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # what open(path, "wb") would have made, not mkstemp's 0o600
        if force:
            os.replace(temp, path)
            return
        try:
            os.link(temp, path)
        except FileExistsError:
            raise _refuse_existing(path) from None
        except OSError:
            if os.path.lexists(path):
                raise _refuse_existing(path) from None
            os.replace(temp, path)
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


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
    ``format`` (a key of :data:`BUNDLE_FORMATS`) says it for a name that does not, never against
    one that does. ``home`` is anything :func:`compose_soul` takes (``fs=`` applies to it), ``out``
    a local path or a single URL; ``storage_options`` go to both (keyed by protocol where they
    differ). An existing ``out`` is a :class:`FileExistsError` unless ``force=True``; a failed write
    raises an :class:`OSError` naming ``out``, leaving nothing behind.
    """
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
    try:
        if out_fs is None:
            _write_local(out_path, data, force)
        else:
            _write_remote(out_fs, out_fs_path, data, force, out_path)
    except FileExistsError:
        raise
    except OSError as error:
        reason = f"cannot write the bundle ({error.strerror or error})"
        raise location_error(type(error), out_path, reason, error.errno) from error
    return sorted(files, key=member_order)
