"""Crossing between sync code, the caller's event loop and an async filesystem's own loop: the
same hops for sources, stores and the cache."""

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
    """Await ``coroutine`` on ``fs``'s loop from the caller's, without a thread per call (one
    created with ``asynchronous=True`` already lives on the caller's loop)."""
    if getattr(fs, "asynchronous", False):
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, fs.loop))
