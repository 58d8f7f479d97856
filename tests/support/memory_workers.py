"""Entry point for writer processes in the memory concurrency tests (kept importable: they start from a
forkserver, see ``store_workers.writer_context``)."""

from __future__ import annotations

from typing import Any


def append_notes(location: str, writer: int, count: int, start: Any) -> None:
    """Append ``count`` distinct notes to ``location`` once every writer is ready."""
    from toolnexus.agents import memory_tool  # noqa: PLC0415

    tool = memory_tool(location)
    start.wait()
    for index in range(count):
        reply = tool.tool(command="append", content=f"note {writer}-{index}")
        if not reply.startswith("ok:"):
            raise AssertionError(reply)
