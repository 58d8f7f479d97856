"""Shared test/benchmark support: an in-process moto S3 server and a
fault-injecting, request-counting HTTP proxy to put in front of it.

The names below are imported on first use (PEP 562), not with the package: the writer processes
the concurrency tests spawn import ``tests.support.store_workers``/``memory_workers``, and each
would otherwise pay for moto and the proxy (about a second of CPU per process) it never uses."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.proxy import (
        Delay,
        FaultAction,
        FaultRule,
        Hold,
        LoseResponse,
        ProxyRequest,
        RequestRecord,
        Reset,
        S3Proxy,
        Stall,
        Status,
        TruncateBody,
        s3_error_body,
    )
    from tests.support.s3 import (
        MotoServer,
        make_bucket,
        put_objects,
        s3_storage_options,
        start_moto_server,
    )

__all__ = [
    "Delay",
    "FaultAction",
    "FaultRule",
    "Hold",
    "LoseResponse",
    "MotoServer",
    "ProxyRequest",
    "RequestRecord",
    "Reset",
    "S3Proxy",
    "Stall",
    "Status",
    "TruncateBody",
    "make_bucket",
    "put_objects",
    "s3_error_body",
    "s3_storage_options",
    "start_moto_server",
]

_S3_NAMES = frozenset({"MotoServer", "make_bucket", "put_objects", "s3_storage_options", "start_moto_server"})


def __getattr__(name: str) -> Any:
    """Import the submodule that defines ``name`` when it is first asked for."""
    if name in __all__:
        module = "tests.support.s3" if name in _S3_NAMES else "tests.support.proxy"
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
