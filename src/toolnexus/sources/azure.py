"""Persona homes on Azure Blob Storage (adlfs): read and revalidated as on any fsspec filesystem,
written with :class:`AzureBlobStore` (``If-Match`` / ``If-None-Match: *`` on the upload, once the
probe has seen the server enforce them).

Registered in ``sources/__init__.py`` for ``az``, ``abfs`` and ``abfss`` (extra ``azure``).
"""

from __future__ import annotations

from toolnexus.sources.fsspec import FsspecSource
from toolnexus.stores import AzureBlobStore

__all__ = ["AzureSource"]


class AzureSource(FsspecSource):
    """A persona home in an Azure Blob container: ``AzureSource(adlfs.AzureBlobFileSystem(…), "c/aster")``."""

    conditional_store = AzureBlobStore
