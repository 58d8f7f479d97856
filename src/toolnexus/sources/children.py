"""A folder's direct children, page by page: what ``audit`` lists to find the personas in it.

Each backend lists its own way (:meth:`SourceBase.children`): a local folder with one streamed
``scandir``; S3 with ``ListObjectsV2`` and a delimiter, a page at a time (see
:meth:`S3Source.children`); any other fsspec filesystem with one ``ls``. The pages are lazy, but
whether the folder exists is decided by the call, so a missing one fails before anything is listed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any, NamedTuple

from toolnexus.errors import location_error, read_error

__all__ = ["LIST_PAGE_SIZE", "Child", "Pages", "fsspec_children", "local_children", "no_such_prefix"]

#: Names per page: S3's own maximum for one listing request, and the page size of a local scan.
LIST_PAGE_SIZE = 1000


class Child(NamedTuple):
    """One direct child: its ``name``, its ``path`` in the source's own form, whether a folder."""

    name: str
    path: str
    folder: bool


#: A folder's children, a page at a time, in the backend's listing order.
Pages = Iterator[list[Child]]


def no_such_prefix(location: str) -> OSError:
    return location_error(FileNotFoundError, location, "no such prefix")


def local_children(root: str) -> Pages | None:
    """``root``'s children (one ``scandir``, streamed), or ``None`` when ``root`` is a file."""
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        raise no_such_prefix(root) from None
    except OSError as error:
        raise read_error(error, root, None) from error
    return _scan(root) if stat.S_ISDIR(mode) else None


def _scan(root: str) -> Pages:
    page: list[Child] = []
    try:
        with os.scandir(root) as scan:
            for entry in scan:
                page.append(Child(entry.name, entry.path, entry.is_dir()))
                if len(page) >= LIST_PAGE_SIZE:
                    yield page
                    page = []
    except OSError as error:
        raise read_error(error, root, None) from error
    if page:
        yield page


def fsspec_children(fs: Any, path: str, location: str) -> Pages | None:
    """One ``ls`` (a filesystem without pages: only the names are held), or ``None`` for a file."""
    fs.invalidate_cache(path)
    try:
        info = fs.info(path)
        if info.get("type") != "directory":
            return None
        listed = fs.ls(path, detail=True)
    except FileNotFoundError:
        raise no_such_prefix(location) from None
    except Exception as error:
        raise read_error(error, location, None) from error
    base = path.rstrip("/")
    children = [
        Child(name.rsplit("/", 1)[-1], name, entry.get("type") == "directory")
        for entry in listed
        if (name := str(entry["name"]).rstrip("/")) != base
    ]
    return iter([sorted(children)])
