"""A folder's direct children, page by page: what ``audit`` lists to find the personas in it.

Each backend lists its own way (:meth:`SourceBase.children`): a local folder with one streamed
``scandir``; S3 with ``ListObjectsV2`` and a delimiter, a page at a time (see
:meth:`S3Source.children`); any other fsspec filesystem with one ``ls``; the obstore engine with
obstore's own delimiter listing (:func:`delimited_children`). The pages are lazy, but
whether the folder exists is decided by the call, so a missing one fails before anything is listed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any, NamedTuple

from toolnexus._object_store import object_store_error, object_store_status
from toolnexus.errors import location_error, read_error

__all__ = [
    "LIST_PAGE_SIZE",
    "Child",
    "Pages",
    "delimited_children",
    "fsspec_children",
    "local_children",
    "no_such_prefix",
]

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


def delimited_children(store: Any, path: str, location: str) -> Pages | None:
    """``path``'s children in an obstore store, from one ``list_with_delimiter``; ``None`` when
    nothing at all is listed there (the caller tells a bundle from no such prefix).

    obstore's delimiter listing has no pages in its API: object_store requests every page of
    the listing (1,000 keys each on S3) and returns them together. So the names of the prefix's
    *direct* children (one per persona, not their files: about 100 bytes each) are held at once,
    then handed out :data:`LIST_PAGE_SIZE` a page in key order; the audit's reads, the bulk of
    its memory, stay bounded by its concurrency. A folder marker (``path/``, listed as ``path``)
    is no child: alone, it makes an empty prefix. A missing bucket is no such prefix.
    """
    import obstore  # noqa: PLC0415  (the optional engine)

    try:
        listing = obstore.list_with_delimiter(store, path or None)
    except Exception as error:
        mapped = object_store_error(error)
        if isinstance(mapped, FileNotFoundError) or object_store_status(error) == 404:
            raise no_such_prefix(location) from None
        raise read_error(mapped, location, None) from error
    base = f"{path}/" if path else ""
    children = [Child(key.removeprefix(base), key, True) for key in map(str, listing["common_prefixes"])]
    keys = [str(meta["path"]) for meta in listing["objects"]]
    children += [Child(key.removeprefix(base), key, False) for key in keys if key != path]
    if not children:
        return iter([]) if path in keys or not path else None  # a marker, or a bucket's root
    children.sort()
    return iter([children[i : i + LIST_PAGE_SIZE] for i in range(0, len(children), LIST_PAGE_SIZE)])
