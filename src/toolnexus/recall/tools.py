"""``memory_search`` and ``memory_get``: the index as two neutral tools (name, description,
schema, ``acall``) any model adapter or framework integration declares. Each answer names the
file and its line range, so the model can ``view`` or edit what it found with the memory tool;
a mistake (a file that is not there, a bad argument) is a :class:`ToolReply` with ``is_error``."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any, ClassVar

from toolnexus._reply import ToolReply
from toolnexus.recall.index import DEFAULT_GET_LINES, DEFAULT_RESULTS, MAX_GET_CHARS, MemoryIndex, memory_path

__all__ = ["MemoryGetTool", "MemorySearchTool", "recall_tools"]

MAX_RESULTS = 20


def native_path(path: str) -> str:
    """The memory tool's ``/memories`` path of a file in the home."""
    return f"/memories/{path.removeprefix('memory/')}"


def _integer(arguments: Mapping[str, Any], field: str, default: int, low: int, high: int) -> int | str:
    value = arguments.get(field)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        return f"error: {field!r} must be an integer from {low} to {high} (got {value!r})."
    return value


class _RecallTool:
    """What both tools share: the index, the blocking work in a worker thread, ``tool()``."""

    name: str
    description: str
    native_kind: str | None = None
    _schema: ClassVar[dict[str, Any]]

    def __init__(self, index: MemoryIndex) -> None:
        self.index = index

    @property
    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    def tool(self, /, **arguments: Any) -> ToolReply:
        """Run one call as the model made it."""
        unknown = sorted(set(arguments) - set(self._schema["properties"]))
        if unknown:
            return ToolReply(f"error: {self.name} takes no {', '.join(map(repr, unknown))}.", is_error=True)
        return self._run(arguments)

    def _run(self, arguments: Mapping[str, Any]) -> ToolReply:
        raise NotImplementedError

    async def acall(self, /, **arguments: Any) -> ToolReply:
        return await asyncio.to_thread(self.tool, **arguments)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.index.source.location!r})"


class MemorySearchTool(_RecallTool):
    name = "memory_search"
    description = (
        "Search your memory — MEMORY.md, USER.md, topic files and daily notes — by keywords, "
        "before answering from memory or when you need a note you do not have in your prompt. "
        "Each hit names its file and lines: read more with memory_get, or edit it with the memory "
        "tool (the /memories path shown). Newer daily notes rank above older ones on the same matter."
    )
    _schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords: names, places, subjects."},
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "description": f"How many hits at most (default {DEFAULT_RESULTS}).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def _run(self, arguments: Mapping[str, Any]) -> ToolReply:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolReply("error: 'query' must be a non-empty string of keywords.", is_error=True)
        k = _integer(arguments, "max_results", DEFAULT_RESULTS, 1, MAX_RESULTS)
        if isinstance(k, str):
            return ToolReply(k, is_error=True)
        hits = self.index.search(query, k)
        if not hits:
            return ToolReply(f"No memory matches {query!r}. Try other keywords.")
        blocks = [
            f"{hit.path} lines {hit.start_line}-{hit.end_line} (score {hit.score:.2f}; "
            f"memory tool path {native_path(hit.path)})\n{hit.snippet}"
            for hit in hits
        ]
        return ToolReply("\n\n".join(blocks))


class MemoryGetTool(_RecallTool):
    name = "memory_get"
    description = (
        f"Read lines of one memory file (a path memory_search gave, like memory/2026-11-30.md or "
        f"/memories/projects/aster.md): from start_line (default 1), {DEFAULT_GET_LINES} lines by "
        f"default, at most {MAX_GET_CHARS} characters."
    )
    _schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file, as memory_search names it."},
            "start_line": {"type": "integer", "minimum": 1, "description": "The first line (1-based)."},
            "lines": {"type": "integer", "minimum": 1, "description": "How many lines."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def _run(self, arguments: Mapping[str, Any]) -> ToolReply:
        path = arguments.get("path")
        if not isinstance(path, str) or not path.strip():
            problem = "error: 'path' must name a memory file, like memory/2026-11-30.md."
            return ToolReply(problem, is_error=True)
        start = _integer(arguments, "start_line", 1, 1, 10**9)
        lines = _integer(arguments, "lines", DEFAULT_GET_LINES, 1, 10**6)
        if isinstance(start, str) or isinstance(lines, str):
            return ToolReply(str(start if isinstance(start, str) else lines), is_error=True)
        try:
            text = self.index.get(path, start_line=start, lines=lines)
        except FileNotFoundError:
            return ToolReply(
                f"error: {memory_path(path)} is not a memory file; memory_search names the files.",
                is_error=True,
            )
        shown = text.count("\n") + 1 if text else 0
        head = f"{memory_path(path)} lines {start}-{start + max(shown, 1) - 1}"
        return ToolReply(f"{head}:\n{text}" if text else f"{head}: (no lines there)")


def recall_tools(index: MemoryIndex) -> tuple[MemorySearchTool, MemoryGetTool]:
    """``memory_search`` and ``memory_get`` over one index."""
    return MemorySearchTool(index), MemoryGetTool(index)
