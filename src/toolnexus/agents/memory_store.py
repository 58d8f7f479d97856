"""Compatibility name for :mod:`.stores`, where the memory tool's stores now live."""

from __future__ import annotations

from .stores import (
    MAX_ATTEMPTS,
    MEMORY_FILE,
    AzureBlobStore,
    Change,
    CompareAndSwapStore,
    FsspecStore,
    GcsStore,
    LocalStore,
    MemoryStore,
    Plan,
    S3Store,
    fsspec_store,
)

__all__ = [
    "MAX_ATTEMPTS",
    "MEMORY_FILE",
    "AzureBlobStore",
    "Change",
    "CompareAndSwapStore",
    "FsspecStore",
    "GcsStore",
    "LocalStore",
    "MemoryStore",
    "Plan",
    "S3Store",
    "fsspec_store",
]
