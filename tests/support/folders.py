"""What every store must do for topic files (``FolderStore``), checked on each backend's server:
a file in folders below the home, a listing, a delete, a rename that never overwrites — and, on
object stores, a rename that loses no edit made between its copy and its delete."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolnexus.stores.base import Change

#: Writes a file behind the store's back (another writer): ``(path below the home, bytes)``.
RawPut = Callable[[str, bytes], None]


def _write(data: bytes) -> Callable[[bytes | None], Change]:
    return lambda current: Change(data, "written")


def exercise_folder_store(store: Any, raw_put: RawPut) -> None:
    topic = store.file("memory/projects/aster.md")
    assert topic.read() is None
    topic.update(_write(b"aster\n"))
    other = store.file("memory/people/mira.md")
    other.update(_write(b"mira\n"))
    raw_put("memory/.aster.md.0123.tmp", b"a temporary file")  # hidden: never a topic file
    assert store.listing("memory") == {"memory/projects/aster.md": 6, "memory/people/mira.md": 5}
    assert topic.rename("memory/people/mira.md") == "exists"
    assert other.read() == b"mira\n"
    assert topic.rename("memory/archive/aster.md") == "renamed"
    assert topic.read() is None
    assert store.file("memory/archive/aster.md").read() == b"aster\n"
    assert topic.rename("memory/elsewhere.md") == "missing"
    assert other.remove()
    assert not other.remove()
    assert store.listing("memory") == {"memory/archive/aster.md": 6}
    assert store.listing("nothing-here") == {}


def exercise_compare_and_swap_rename(store: Any, raw_put: RawPut) -> None:
    """Another writer edits the file between the rename's copy and its delete: the conditional
    delete fails, the copy is taken back, and the rename starts over with the edit."""
    source = store.file("memory/race.md")
    source.update(_write(b"first\n"))
    real_delete_if = source.delete_at
    versions: list[str] = []

    def edited_in_between(version: str) -> bool:
        if not versions:
            raw_put("memory/race.md", b"first\nedited meanwhile\n")
        versions.append(version)
        result: bool = real_delete_if(version)
        return result

    source.delete_at = edited_in_between
    assert source.rename("memory/moved.md") == "renamed"
    assert len(versions) == 2
    assert source.read() is None
    assert store.file("memory/moved.md").read() == b"first\nedited meanwhile\n"
    moved = store.file("memory/moved.md")
    data, version = moved.read_versioned()
    assert not moved.delete_if(moved.path, moved.stale_version)  # the server enforces the condition
    assert moved.read_versioned() == (data, version)
    assert moved.delete_if(moved.path, version)
    assert moved.read() is None
