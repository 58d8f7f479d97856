"""A backend is one module plus one registration line: the one in docs/extending.md, built and used.

The documented module (the first Python block of docs/extending.md, the same as CONTRIBUTING's
"Adding a backend") is executed as a module of its own, and then used through every entry point:
composed, cached (its own versions decide what is re-read), written with compare-and-swap. The
registries it touches (fsspec's and toolnexus's protocol tables, the probe's verdicts) are
restored after each test.
"""

from __future__ import annotations

import ast
import importlib
import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from toolnexus import sources, stores
from toolnexus.agents import BootstrapError, DictSource, SoulCache, compose_soul, inspect_soul, memory_tool
from toolnexus.sources import registry, resolve
from toolnexus.stores.base import Change
from toolnexus.stores.probe import forget_verdicts

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
SOUL = b"You are Aster, " + b"a careful assistant. " * 40


def backend_module_code() -> str:
    return BLOCK.findall((ROOT / "docs" / "extending.md").read_text(encoding="utf-8"))[0]


@pytest.fixture
def kv(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """The documented backend, loaded afresh (its server starts empty); registries restored after."""
    classes = importlib.import_module("fsspec.registry")._registry  # `fsspec.registry` is a mapping
    known = dict(classes)
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    module = types.ModuleType("kv_backend")
    try:
        exec(compile(backend_module_code(), "docs/extending.md", "exec"), module.__dict__)
        module.KVFileSystem.store.clear()  # what the page's own example wrote, and its verdict
        module.KVFileSystem.versions.clear()
        forget_verdicts()
        yield module
    finally:
        classes.clear()
        classes.update(known)
        forget_verdicts()


def server(kv: types.ModuleType) -> Any:
    return fsspec.filesystem("kv")


def seed(kv: types.ModuleType, home: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        server(kv).pipe_file(f"kv://{home}/{name}", data)


def test_contributing_shows_the_same_one_file_backend() -> None:
    code = backend_module_code()
    assert f"```python\n{code}```" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert code.count("register_filesystem_source(") == 1  # the one registration line
    assert "def changed_since(" in code
    assert "class KVStore(CompareAndSwapStore)" in code


def test_the_stores_surface_is_what_the_page_builds_a_store_from() -> None:
    """Every other name of the stores is imported from its module, inside toolnexus."""
    page = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    assert stores.__all__ == ["CompareAndSwapStore", "Stored"]
    assert "from toolnexus.stores import CompareAndSwapStore" in page
    assert "`Stored(data, version," in page
    assert "(from `toolnexus.stores`)" in page


@pytest.mark.parametrize("layer", ["soul", "skills", "memory", "fleet", "runtime", "models", "cli"])
def test_no_layer_above_the_sources_knows_a_backend(layer: str) -> None:
    """They import the sources package's surface, never a module of it or a backend's source class
    (``SourceBase`` itself is the interface every resolved source has): which backend a home is
    on, and what that means for reading, writing and freshness, stays below."""
    for path in sorted((ROOT / "src" / "toolnexus" / layer).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolnexus.sources"):
                assert node.module == "toolnexus.sources", f"{layer}/{path.name} imports {node.module}"
                for alias in node.names:
                    imported = getattr(sources, alias.name)
                    is_source = isinstance(imported, type) and issubclass(imported, sources.SourceBase)
                    is_source = is_source and imported is not sources.SourceBase
                    assert not is_source, f"{layer}/{path.name} imports the source class {alias.name}"


def test_the_registration_line_makes_the_protocol_a_location(kv: types.ModuleType) -> None:
    seed(kv, "basil", {"SOUL.md": SOUL, "USER.md": b"Sam."})
    source = resolve("kv://basil")
    assert type(source) is kv.KVSource
    assert compose_soul("kv://basil") == compose_soul(DictSource({"SOUL.md": SOUL, "USER.md": b"Sam."}))
    assert inspect_soul("kv://basil").found == ["SOUL.md", "USER.md"]
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        compose_soul("kv://nobody")


@pytest.mark.parametrize("change", ["same-size rewrite", "add", "remove"])
def test_the_cache_asks_the_backend_what_changed(
    kv: types.ModuleType, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    seed(kv, "aster", {"SOUL.md": SOUL, "IDENTITY.md": b"Aster.", "TOOLS.md": b"None."})
    fetched: list[list[str]] = []
    real = kv.KVSource._fetch

    def counting(self: Any, names: list[str], limit: int) -> list[Any]:
        fetched.append(list(names))
        return real(self, names, limit)

    monkeypatch.setattr(kv.KVSource, "_fetch", counting)
    cache = SoulCache()
    first = cache.compose_soul("kv://aster")
    fetched.clear()
    assert cache.compose_soul("kv://aster") == first
    assert fetched == []  # unchanged: versions only, no bytes read
    if change == "same-size rewrite":
        seed(kv, "aster", {"SOUL.md": SOUL.upper()})
        expected_reads = [["SOUL.md"]]
    elif change == "add":
        seed(kv, "aster", {"MEMORY.md": b"Remember this."})
        expected_reads = [["MEMORY.md"]]
    else:
        server(kv).rm_file("kv://aster/TOOLS.md")
        expected_reads = []
    fetched.clear()
    cached = cache.compose_soul("kv://aster")
    assert fetched == expected_reads  # only what changed was read
    assert cached == compose_soul("kv://aster")
    assert (cache.stats.misses, cache.stats.revalidated) == (1, 2)


def test_writes_are_compare_and_swap_on_the_servers_versions(kv: types.ModuleType) -> None:
    seed(kv, "aster", {"SOUL.md": SOUL})
    tool = memory_tool("kv://aster")
    assert tool.tool(command="append", content="- first").startswith("ok")
    store = resolve("kv://aster").writer("MEMORY.md")  # type: ignore[attr-defined]
    calls = 0

    def append_mine(current: bytes | None) -> Change:
        nonlocal calls
        calls += 1
        if calls == 1:  # another process's write lands between this read and this write
            server(kv).pipe_file("kv://aster/MEMORY.md", (current or b"") + b"- theirs\n")
        return Change((current or b"") + b"- mine\n", "ok")

    store.update(append_mine)
    assert calls == 2  # the conflict was seen and the edit re-applied on the new version
    memory = server(kv).cat_file("kv://aster/MEMORY.md")
    assert memory == b"- first\n- theirs\n- mine\n"


def test_a_server_that_ignores_the_version_is_refused(
    kv: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(kv, "aster", {"SOUL.md": SOUL})

    def put_anyway(self: Any, path: str, data: bytes, version: int | None) -> bool:
        self.pipe_file(path, data)
        return True

    monkeypatch.setattr(kv.KVFileSystem, "put_if", put_anyway)
    with pytest.raises(BootstrapError, match="does not enforce conditional writes"):
        memory_tool("kv://aster").tool(command="append", content="- lost?")
    assert not server(kv).exists("kv://aster/MEMORY.md")
