"""Persona homes on each writable backend, with raw access to check bytes behind the tool's back."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import pytest

from toolnexus.agents import BOOTSTRAP_ORDER, MemoryTool, compose_soul, memory_tool

#: The six files memory_tool must never touch, seeded into every home.
OTHER_FILES = {name: f"# {name}\n\ncontent of {name}\n".encode() for name in BOOTSTRAP_ORDER[:-1]}


@dataclass
class Home:
    """One persona home: how to reach it, and raw put/get/listing that bypass toolnexus."""

    backend: str
    location: str
    options: dict[str, Any]
    put: Callable[[str, bytes], None]
    get: Callable[[str], bytes | None]
    listing: Callable[[], set[str]]
    extra: dict[str, Any] = field(default_factory=dict)
    #: Every file below the home, by path relative to it (``memory/projects/aster.md``).
    tree: Callable[[], dict[str, bytes]] = dict

    def tool(self) -> MemoryTool:
        return memory_tool(self.location, **self.options)

    def soul(self) -> tuple[str, list[str]]:
        return compose_soul(self.location, **self.options)

    def memory(self) -> bytes | None:
        return self.get("MEMORY.md")


def local_home(root: Path) -> Home:
    root.mkdir(parents=True, exist_ok=True)

    def put(name: str, data: bytes) -> None:
        (root / name).write_bytes(data)

    def get(name: str) -> bytes | None:
        path = root / name
        return path.read_bytes() if path.exists() else None

    def tree() -> dict[str, bytes]:
        return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()}

    home = Home("local", str(root), {}, put, get, lambda: set(os.listdir(root)), tree=tree)
    return _seeded(home)


def memory_home() -> Home:
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)

    def get(name: str) -> bytes | None:
        return bytes(fs.cat_file(f"/aster/{name}")) if fs.exists(f"/aster/{name}") else None

    home = Home(
        "memory",
        "/aster",
        {"fs": fs},
        lambda name, data: fs.pipe_file(f"/aster/{name}", data),
        get,
        lambda: {path.rsplit("/", 1)[-1] for path in fs.find("/aster")},
        {"fs": fs},
        lambda: {path.removeprefix("/aster/"): bytes(fs.cat_file(path)) for path in fs.find("/aster")},
    )
    return _seeded(home)


def s3_home(bucket: str, options: dict[str, Any]) -> Home:
    fs = fsspec.filesystem("s3", **options)
    prefix = f"{bucket}/aster"

    def get(name: str) -> bytes | None:
        try:
            return bytes(fs.cat_file(f"{prefix}/{name}"))
        except FileNotFoundError:
            return None

    def listing() -> set[str]:
        fs.invalidate_cache()
        return {path.rsplit("/", 1)[-1] for path in fs.find(prefix)}

    def tree() -> dict[str, bytes]:
        fs.invalidate_cache()
        return {path.removeprefix(f"{prefix}/"): bytes(fs.cat_file(path)) for path in fs.find(prefix)}

    home = Home(
        "s3",
        f"s3://{prefix}",
        {"storage_options": options},
        lambda name, data: fs.pipe_file(f"{prefix}/{name}", data),
        get,
        listing,
        {"fs": fs, "bucket": bucket, "key": "aster/MEMORY.md"},
        tree,
    )
    return _seeded(home)


def make_home(backend: str, request: pytest.FixtureRequest) -> Home:
    """A fresh seeded home; the moto server is only started for ``"s3"``."""
    if backend == "local":
        return local_home(request.getfixturevalue("tmp_path") / "aster")
    if backend == "memory":
        return memory_home()
    return s3_home(request.getfixturevalue("new_bucket")(), request.getfixturevalue("s3_options"))


def _seeded(home: Home) -> Home:
    for name, data in OTHER_FILES.items():
        home.put(name, data)
    return home
