"""A Dask client to audit on (``"local"``: a ``LocalCluster`` here); Dask is imported when asked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Seconds to wait for a scheduler before giving up (``toolnexus audit --dask-timeout``).
DEFAULT_CONNECT_TIMEOUT = 10.0


def _distributed() -> Any:
    try:
        import distributed  # noqa: PLC0415
    except ImportError as error:
        raise ImportError("auditing on Dask needs dask.distributed: pip install 'toolnexus[dask]'") from error
    return distributed


@contextmanager
def dask_client(
    address: str, *, timeout: float = DEFAULT_CONNECT_TIMEOUT, workers: int | None = None
) -> Iterator[Any]:
    """A connected ``dask.distributed.Client``, closed on exit: ``"local"`` starts (and stops) a
    ``LocalCluster`` of one-thread worker processes; another address is a scheduler's, one not
    reached within ``timeout`` seconds an :class:`OSError` naming it."""
    distributed = _distributed()
    if address == "local":
        options: dict[str, Any] = {"processes": True, "threads_per_worker": 1, "dashboard_address": None}
        if workers is not None:
            options["n_workers"] = workers
        with distributed.LocalCluster(**options) as cluster, distributed.Client(cluster) as client:
            yield client
        return
    try:
        client = distributed.Client(address, timeout=timeout)
    except Exception as error:
        raise OSError(f"cannot reach the Dask scheduler at {address}: {error}") from error
    with client:
        yield client
