"""Where the home is inside an archive (zip and tar): the root, unless it holds no bootstrap file
and one top-level folder; several are an error showing how to pick one (``zip://FOLDER::…``).
Names are normalised once (``\\`` a separator, a tar's ``./`` dropped), then matched literally."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import IO

from toolnexus.errors import BootstrapError, describe, location_error
from toolnexus.sources.base import read_errors

#: Folders that archivers add and that are never a persona's home.
IGNORED_TOP_LEVEL = frozenset({"__MACOSX"})

#: The home's folder of topic files: a root holding only it is a home, not a folder to descend into.
NOTES_FOLDER = "memory"
#: Folders of a home itself: a root holding only these (a home without bootstrap files) is a home.
HOME_FOLDERS = frozenset({NOTES_FOLDER, "skills", ".agents"})


def member_path(raw: str, *, dot_prefixed: bool = False) -> str:
    """``/`` separators; ``dot_prefixed`` (tar) drops a leading ``./``."""
    path = raw.replace("\\", "/")
    while dot_prefixed and path.startswith("./"):
        path = path[2:]
    return path


def home_prefix(
    paths: Iterable[str], names: Sequence[str], folder: str | None, location: str, protocol: str
) -> str:
    """``""`` for the root or ``"FOLDER/"``; ``paths`` are normalised member paths."""
    all_paths = list(paths)
    if folder is not None:
        prefix = f"{folder.strip('/')}/" if folder.strip("/") else ""
        if prefix and not any(path.startswith(prefix) for path in all_paths):
            reason = f"the bundle has no folder {folder.strip('/')!r}"
            raise location_error(FileNotFoundError, location, reason)
        return prefix
    root_files = {path for path in all_paths if path and "/" not in path}
    if root_files.intersection(names):
        return ""
    tops = {path.split("/", 1)[0] for path in all_paths if "/" in path}
    folders = sorted(tops - IGNORED_TOP_LEVEL - {"", ".", ".."})
    if folders and HOME_FOLDERS.issuperset(folders):
        return ""  # notes and skills only (write_bundle of a home without bootstrap files)
    if len(folders) == 1 and not root_files:
        return f"{folders[0]}/"
    if len(folders) > 1:
        shown = ", ".join(repr(name) for name in folders[:10]) + (", …" if len(folders) > 10 else "")
        raise BootstrapError(
            f"{location}: the bundle's root holds no bootstrap file but several folders ({shown}); "
            f"name the persona's folder: {protocol}://{folders[0]}::{location}"
        )
    return ""


def open_bundle_file(opener: Callable[[], IO[bytes]], location: str) -> IO[bytes]:
    """The archive file for one read; failing to open it is about the bundle."""
    with read_errors(location, missing="no such persona bundle"):
        return opener()


def twice(location: str, path: str) -> BootstrapError:
    return BootstrapError(
        f"{describe(location, path)}: the bundle holds this member twice; "
        "refusing to guess which one is the persona's"
    )
