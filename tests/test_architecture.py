"""The layers of src/toolnexus, checked from the source (CONTRIBUTING.md, "Layout").

Every ``import`` and ``from … import`` statement naming a ``toolnexus`` module is an edge of the
graph, wherever it stands: at the top, inside a function (the lazy imports of optional packages'
users), and also under ``if TYPE_CHECKING:`` — none is excluded, so a type-only import is held to
the same order (mypy reads it; a cycle there is still a knot for the reader). ``from pkg import
name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``. Importing a submodule
also runs its package's ``__init__``, but that is the package's business, not an edge.

``toolnexus`` (the core, each name imported on first use) and ``toolnexus.agents`` (everything) are
the public surfaces and define nothing (checked below); the CLI sits above them and imports the
public API from them, a client of the library like any other. ``toolnexus.sources`` keeps one more,
small surface for new backends (its ``__all__``).

The layers, low to high; a module may import its own layer and the layers below, never above:
``_aio``/``_fs``/``_object_store``/``_tokens``/``_reply``/``errors`` < ``composer`` < ``stores`` <
``sources`` < ``recall`` < ``skills`` < ``soul`` < ``memory`` < ``fleet`` < ``runtime`` < ``models``
< ``agents`` and ``toolnexus/__init__.py`` (the public surfaces, re-exports only) < ``cli`` and
``integrations`` (the frameworks' adapters, beside the command line); ``__main__`` runs the
command (with cli).
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
LAYERS = [
    (
        "toolnexus._aio",
        "toolnexus._fs",
        "toolnexus._object_store",
        "toolnexus._tokens",
        "toolnexus._reply",
        "toolnexus.errors",
    ),
    ("toolnexus.composer",),
    ("toolnexus.stores",),
    ("toolnexus.sources",),
    ("toolnexus.recall",),
    ("toolnexus.skills",),
    ("toolnexus.soul",),
    ("toolnexus.memory",),
    ("toolnexus.fleet",),
    ("toolnexus.runtime",),
    ("toolnexus.models",),
    ("toolnexus.agents", "toolnexus"),
    ("toolnexus.cli", "toolnexus.__main__", "toolnexus.integrations"),
]


def modules() -> dict[str, Path]:
    """Every module under src/toolnexus by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((SRC / "toolnexus").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def facade(module: str = "toolnexus.agents") -> dict[str, str]:
    """Each name ``module`` imports -> the module it is imported from (``if TYPE_CHECKING:`` too)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: str(node.module)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and str(node.module).startswith("toolnexus.")
        for alias in node.names
    }


FACADE = facade()
CORE = facade("toolnexus")

#: ``toolnexus.agents``' names on 9efaa5e, the specification's import path: none may go.
AGENTS_NAMES = {
    "AUDIT_ISSUES", "BOOTSTRAP_ORDER", "HEARTBEAT_OK", "MAX_BOOTSTRAP_FILE_BYTES", "PROFILES",
    "TRUNCATION_NOTICE", "Agent", "AgentTool", "AnthropicModel", "AuditSummary", "BootstrapError",
    "BootstrapFile", "BootstrapSource", "Budget", "DictSource", "FileReport", "LayeredSource",
    "MemoryTool", "ModelError", "ModelReply", "ObstoreSource", "OpenAIChatModel", "PersonaAudit",
    "RunResult", "Session", "Soul", "SoulCache", "SoulReport", "SourceBase", "SyncSession", "Tool",
    "ToolCall", "ToolReply", "Usage", "agent_from_dir", "anthropic_tool_result", "audit",
    "compose_soul", "compose_soul_async", "dask_client", "inspect_soul", "memory_tool",
    "read_bootstrap_file", "write_bundle",
    # added since, for searching memory
    "Hit", "MemoryGetTool", "MemoryIndex", "MemorySearchTool", "memory_index",
}  # fmt: skip


def imports(path: Path) -> set[str]:
    """The toolnexus modules ``path`` imports (see the module docstring for what counts)."""
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                targets.add(submodule if submodule in MODULES else node.module)
    assert not [t for t in targets if t.startswith("toolnexus.") and t not in MODULES], path
    return {target for target in targets if target in MODULES}


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each module's toolnexus imports, parsed when a test first asks (not at collection)."""
    return {name: imports(path) - {name} for name, path in MODULES.items()}


def layer(module: str) -> int:
    """The index in ``LAYERS`` of the layer ``module`` belongs to (its longest matching prefix)."""
    matches = [
        (len(prefix), index)
        for index, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or (prefix != "toolnexus" and module.startswith(f"{prefix}."))
    ]
    assert matches, f"{module} belongs to no layer: add it to LAYERS and CONTRIBUTING's diagram"
    return max(matches)[1]


def test_the_graph_is_read_from_the_source() -> None:
    assert len(MODULES) >= 50
    assert "toolnexus.agents" in graph()["toolnexus.cli.app"]
    assert "toolnexus.sources.registry" in graph()["toolnexus.sources.tar"]
    assert "toolnexus.composer.rules" in graph()["toolnexus.soul.compose"]
    assert sum(map(len, graph().values())) >= 100


def test_every_module_has_a_layer() -> None:
    assert {module: layer(module) for module in MODULES}


def test_no_import_cycle() -> None:
    try:
        TopologicalSorter(graph()).prepare()
    except CycleError as error:
        raise AssertionError(f"an import cycle: {' -> '.join(error.args[1])}") from None


def test_no_import_runs_up_a_layer() -> None:
    upward = sorted(
        f"{module} ({LAYERS[layer(module)][0]}) imports {target} ({LAYERS[layer(target)][0]})"
        for module, targets in graph().items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert upward == []


def test_the_public_surface_only_re_exports() -> None:
    """``toolnexus.agents`` defines nothing: every statement is an import, ``__all__`` or the docstring."""
    tree = ast.parse(MODULES["toolnexus.agents"].read_text(encoding="utf-8"))
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "Import", "ImportFrom", "Assign"}
    assigned = [ast.unparse(t) for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
    assert assigned == ["__all__"]
    assert set(FACADE) >= set(ast.literal_eval(next(n for n in tree.body if isinstance(n, ast.Assign)).value))


def test_the_agents_surface_keeps_every_name() -> None:
    import toolnexus.agents  # noqa: PLC0415

    assert set(toolnexus.agents.__all__) >= AGENTS_NAMES


def test_the_core_is_the_agents_surface_without_the_runtime() -> None:
    """``import toolnexus`` gives composing, inspecting, caching, budgets, profiles, bundles, the
    sources to extend and the error: the same objects as ``toolnexus.agents``, each imported from
    its own module on first use, and none from a layer above ``soul``."""
    import toolnexus  # noqa: PLC0415
    import toolnexus.agents  # noqa: PLC0415

    names = set(toolnexus.__all__) - {"__version__"}
    assert names <= set(toolnexus.agents.__all__)
    assert set(CORE) == names
    assert toolnexus._HOMES == CORE  # what __getattr__ imports is what mypy and the reader see
    assert all(layer(module) <= layer("toolnexus.soul") for module in CORE.values())
    assert all(getattr(toolnexus, name) is getattr(toolnexus.agents, name) for name in names)


def test_importing_the_core_imports_nothing_else() -> None:
    """``import toolnexus`` (and so every submodule's import, the command line's too) stays cheap."""
    code = "import sys, toolnexus; print(sorted(m for m in sys.modules if m.startswith('toolnexus')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "['toolnexus']"


def test_no_test_module_imports_another() -> None:
    """Tests share code through ``tests.support`` and fixtures through ``conftest.py``, never by
    importing a test module (CONTRIBUTING.md, "Tests")."""
    tests = Path(__file__).resolve().parent
    offending = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if any(name.startswith("tests.") and "test_" in name for name in names):
                offending.append(f"{path.relative_to(tests)}: {names}")
    assert offending == []
