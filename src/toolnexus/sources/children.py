"""A folder's direct children page by page (:meth:`SourceBase.children`); a missing folder fails
at the call, before any page."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any, NamedTuple

from toolnexus._object_store import object_store_error, object_store_status
from toolnexus.errors import location_error, read_error

#: Names per page: S3's own maximum for one listing request, and the page size of a local scan.
LIST_PAGE_SIZE = 1000


class Child(NamedTuple):
    name: str
    path: str
    folder: bool


#: A folder's children, a page at a time, in the backend's listing order.
Pages = Iterator[list[Child]]


def no_such_prefix(location: str) -> OSError:
    return location_error(FileNotFoundError, location, "no such prefix")


def local_children(root: str) -> Pages | None:
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
    """``path``'s children from one ``list_with_delimiter`` (``None``: nothing there), which has no
    pages: the names (~100 bytes a persona) are held at once."""
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
