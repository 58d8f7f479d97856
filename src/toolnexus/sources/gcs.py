"""Persona homes on Google Cloud Storage (gcsfs): read and revalidated as on any fsspec
filesystem, written with :class:`GcsStore` (``ifGenerationMatch``, ``0`` meaning "must not
exist", once the probe has seen the server enforce it).

Registered in ``sources/__init__.py`` for ``gs`` and ``gcs`` (extra ``gcs``).
"""

from __future__ import annotations

from toolnexus.sources.fsspec import FsspecSource
from toolnexus.stores import GcsStore

__all__ = ["GcsSource"]


class GcsSource(FsspecSource):
    """A persona home in a GCS bucket: ``GcsSource(gcsfs.GCSFileSystem(), "bucket/aster")``."""

    conditional_store = GcsStore
