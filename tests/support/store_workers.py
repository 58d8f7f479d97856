"""Writer processes for the object-store concurrency tests (started from a forkserver, so kept
importable)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "append_from_processes",
    "appends_per_process",
    "exit_codes",
    "report_figure",
    "writer_context",
    "writer_process",
]


def appends_per_process(stress: bool) -> int:
    """Appends per writer process: 12 by default (four writers started at one barrier: 48 notes,
    enough for every writer to lose races and retry), 50 with ``--stress`` (200 notes, past the
    object-store contract's 100)."""
    return 50 if stress else 12


def writer_context() -> Any:
    """The multiprocessing context writer processes start from: a forkserver that has imported
    what a writer needs once (``tests.support.writer_preload``), so each writer starts in
    milliseconds instead of a second of CPU. A writer is a fresh fork of that server, not of the
    test process: no threads, sockets or event loops are inherited; its working directory and
    ``sys.path`` are the test's, and :func:`writer_process` gives it the test's environment."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.support.writer_preload"])
    return context


def writer_process(target: Callable[..., None], *args: Any, **kwargs: Any) -> Any:
    """A writer process (not started) running ``target(*args, **kwargs)`` in this process's
    environment as it is now, as a spawned process would (the forkserver's is that of the time
    it started: a test's ``GCSFS_…`` or ``AWS_…`` variables would be missing)."""
    return writer_context().Process(target=_in_environment, args=(dict(os.environ), target, args, kwargs))


def _in_environment(
    environ: dict[str, str], target: Callable[..., None], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    os.environ.clear()
    os.environ.update(environ)
    target(*args, **kwargs)


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
    """Run ``writers`` processes appending ``count`` notes each (through ``engine``); their exit
    codes."""
    start = writer_context().Barrier(writers)
    processes = [
        writer_process(_append_notes, location, options, writer, count, start, engine=engine)
        for writer in range(writers)
    ]
    return exit_codes(processes)


def exit_codes(processes: Sequence[Any]) -> list[int]:
    """Start the writers, wait for each (a hung one is killed after 120 s: -1), their exit codes."""
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
