"""A file on Azure Blob Storage (adlfs): the blob's ETag comes with its bytes; the upload is
conditional (``If-Match: <etag>``, or ``If-None-Match: *`` when creating), which Azure answers
with 412 / 409 when another writer got there first. The lineage (:mod:`.lineage`) is the blob's
``toolnexus_edits`` metadata (Azure's metadata names are C# identifiers: no hyphen)."""

from __future__ import annotations

from typing import Any

from toolnexus._aio import run_on_loop
from toolnexus.stores.base import READ_LIMIT
from toolnexus.stores.lineage import Stored, parse_lineage
from toolnexus.stores.looped import LoopedStore

__all__ = ["AzureBlobStore"]

_LINEAGE_KEY = "toolnexus_edits"


def _is_invalid_range(error: BaseException) -> bool:
    """A ranged read of an empty blob: HTTP 416 ``InvalidRange``."""
    return getattr(error, "status_code", None) == 416 or getattr(error, "error_code", None) == "InvalidRange"


class AzureBlobStore(LoopedStore):
    """A file in an Azure Blob container, written with ETag conditions through azure-storage-blob."""

    conditions = ("If-None-Match: *", "If-Match")
    stale_version = '"0x0000000000000000"'

    def _client(self, path: str) -> Any:
        container, blob, _ = self.fs.split_path(path)
        return self.fs.service_client.get_blob_client(container, blob)

    async def _get(self, path: str) -> Stored:
        from azure.core.exceptions import ResourceNotFoundError  # noqa: PLC0415  (optional backend)

        client = self._client(path)
        try:
            try:
                downloader = await client.download_blob(offset=0, length=READ_LIMIT)
            except Exception as error:
                if not _is_invalid_range(error):
                    raise
                # An empty blob (or one that just stopped being empty): read it unranged, which
                # the SDK itself handles for empty blobs; the bytes are still capped below.
                downloader = await client.download_blob()
        except ResourceNotFoundError:
            return Stored(None, None)
        data = await downloader.read(READ_LIMIT)
        properties = downloader.properties
        lineage = parse_lineage((properties.metadata or {}).get(_LINEAGE_KEY))
        return Stored(bytes(data), str(properties.etag), lineage)

    async def _put(self, path: str, data: bytes, version: str | None, lineage: str | None) -> bool:
        from azure.core import MatchConditions  # noqa: PLC0415
        from azure.core.exceptions import ResourceExistsError, ResourceModifiedError  # noqa: PLC0415

        client = self._client(path)
        if version is None:
            condition: dict[str, Any] = {"overwrite": False}  # sends If-None-Match: *
        else:
            condition = {"overwrite": True, "etag": version, "match_condition": MatchConditions.IfNotModified}
        if lineage is not None:
            condition["metadata"] = {_LINEAGE_KEY: lineage}
        try:
            await client.upload_blob(data, **condition)
        except (ResourceExistsError, ResourceModifiedError):
            return False
        return True

    async def _delete(self, path: str) -> None:
        await self._client(path).delete_blob()

    def delete_if(self, path: str, version: str) -> bool:
        result: bool = run_on_loop(self.fs, self._delete_blob_if, path, version)
        return result

    async def _delete_blob_if(self, path: str, version: str) -> bool:
        from azure.core import MatchConditions  # noqa: PLC0415
        from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError  # noqa: PLC0415

        try:
            await self._client(path).delete_blob(etag=version, match_condition=MatchConditions.IfNotModified)
        except (ResourceModifiedError, ResourceNotFoundError):
            return False
        return True
