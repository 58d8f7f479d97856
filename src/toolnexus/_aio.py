"""Crossing between sync code, the caller's event loop and an async fsspec filesystem's own loop.

Written once here because sources, stores and the cache all make the same two hops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_on_loop(fs: Any, function: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
    """Run one of an async fsspec filesystem's coroutine functions from sync code, on its own loop."""
    from fsspec.asyn import sync  # noqa: PLC0415  (fsspec is imported on first remote use)

    result: T = sync(fs.loop, function, *args, **kwargs)
    return result


async def await_on_loop(fs: Any, coroutine: Coroutine[Any, Any, T]) -> T:
    """Await ``coroutine`` on ``fs``'s loop from the caller's loop, without a thread per call.

    A filesystem created with ``asynchronous=True`` already lives on the caller's loop.
    """
    if getattr(fs, "asynchronous", False):
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, fs.loop))


def run_sync(function: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
    """Run a coroutine function to completion from sync code, on fsspec's I/O loop thread.

    For clients that are not fsspec filesystems (obstore) but whose batches must still run
    concurrently from sync code: one loop thread for the process, not a loop per call, and safe
    to call from inside a running event loop (the caller's loop is never the one used)."""
    from fsspec.asyn import get_loop, sync  # noqa: PLC0415  (fsspec is imported on first remote use)

    result: T = sync(get_loop(), function, *args, **kwargs)
    return result
