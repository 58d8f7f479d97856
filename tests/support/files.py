"""Homes, zip archives and a dict-backed source built from plain ``{name: bytes}`` maps.

One copy of each, shared by every test file. For a reproducible bundle of bootstrap files only, use
the library's own :func:`toolnexus.soul.bundling.bundle_bytes`; :func:`zip_bytes` is for archives
the library would never write (a folder prefix, other members, stored members, hostile names).
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def make_home(root: Path, files: Mapping[str, bytes]) -> Path:
    """A local persona home at ``root`` (created if missing) holding ``files``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def text_home(root: Path, name: str = "aster", **files: str) -> Path:
    """A new local home ``root/name`` holding a one-line ``SOUL.md`` and ``files`` (name -> text)."""
    home = root / name
    home.mkdir()
    for file, text in {"SOUL.md": f"You are {name.title()}.", **files}.items():
        (home / file).write_text(text, encoding="utf-8")
    return home


def tar_bytes(files: Mapping[str, bytes], folder: str, mode: str) -> bytes:
    """A tar archive (``mode`` as for :func:`tarfile.open`, e.g. ``"w:gz"``) of ``files`` under ``folder``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        if folder:  # as `tar -czf aster.tar.gz aster/` does: the folder has its own entry
            directory = tarfile.TarInfo(folder.rstrip("/"))
            directory.type = tarfile.DIRTYPE
            archive.addfile(directory)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{folder}{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zip_bytes(
    files: Mapping[str, bytes],
    *,
    folder: str = "",
    folder_entry: bool = False,
    compression: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    """A zip archive of ``files``, each under ``folder`` (e.g. ``"aster/"``), in the given order.

    ``folder_entry`` adds the folder's own entry first, as ``zip -r aster.zip aster/`` does.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        if folder and folder_entry:
            archive.writestr(folder, b"")
        for name, data in files.items():
            archive.writestr(folder + name, data)
    return buffer.getvalue()


class DictSource:
    """A user-defined BootstrapSource over a dict: the smallest thing the protocol accepts.

    Kept minimal on purpose (``location`` + ``read``) so it proves the protocol is pluggable; swap
    it for the library's public dict source once there is one, if that stays this minimal.
    """

    def __init__(self, files: Mapping[str, bytes] | None = None, location: str = "dict://persona") -> None:
        self.files = dict(files or {})
        self.location = location

    def read(self, names: Sequence[str], limit: int) -> Mapping[str, bytes]:
        """The first ``limit + 1`` bytes of each present name, as the protocol asks."""
        return {name: self.files[name][: limit + 1] for name in names if name in self.files}
