"""Writer processes for the object-store concurrency tests (spawned, so kept importable)."""

from __future__ import annotations

import multiprocessing
from typing import Any

__all__ = ["append_from_processes", "appends_per_process", "report_figure"]


def appends_per_process(stress: bool) -> int:
    """Appends per writer process: 12 by default (four writers started at one barrier: 48 notes,
    enough for every writer to lose races and retry), 50 with ``--stress`` (200 notes, past the
    object-store contract's 100)."""
    return 50 if stress else 12


def _append_notes(
    location: str, options: dict[str, Any], writer: int, count: int, start: Any, *, engine: str
) -> None:
    """Append ``count`` distinct notes once every writer is ready; any reply but "ok" fails."""
    from toolnexus.agents import memory_tool  # noqa: PLC0415

    tool = memory_tool(location, storage_options=options, engine=engine)
    start.wait()
    for index in range(count):
        reply = tool.tool(command="append", content=f"note {writer}-{index}")
        if not reply.startswith("ok:"):
            raise AssertionError(reply)


def append_from_processes(
    location: str, options: dict[str, Any], writers: int, count: int, engine: str = "fsspec"
) -> list[int]:
    """Run ``writers`` spawned processes appending ``count`` notes each (through ``engine``);
    their exit codes."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(writers)
    processes = [
        context.Process(
            target=_append_notes,
            args=(location, options, writer, count, start),
            kwargs={"engine": engine},
        )
        for writer in range(writers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        if process.exitcode is None:
            process.kill()
            process.join()
    return [process.exitcode if process.exitcode is not None else -1 for process in processes]


def report_figure(record_property: Any, capsys: Any, text: str) -> None:
    """Show a measured figure: printed in a plain run, and recorded as the test's ``figures``
    property, which survives pytest-xdist (whose workers swallow prints)."""
    record_property("figures", f"[stores] {text}")
    with capsys.disabled():
        print(f"\n[stores] {text}")
