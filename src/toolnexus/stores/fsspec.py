"""The stores over fsspec filesystems: plain writes under a process lock (:class:`FsspecStore`), and
S3 (s3fs), Azure Blob (adlfs) and GCS (gcsfs) under the compare-and-swap loop, each keeping the
lineage in the object's metadata under the name obstore's store uses too."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from toolnexus._aio import run_on_loop
from toolnexus._fs import is_empty_range_error
from toolnexus.stores.base import (
    MEMORY_FILE,
    READ_LIMIT,
    Change,
    CompareAndSwapStore,
    HomeFile,
    Moved,
    Plan,
    process_lock,
    storage_action,
)
from toolnexus.stores.lineage import AZURE_LINEAGE_KEY, LINEAGE_KEY, Stored, parse_lineage

#: S3 error codes meaning "someone else changed the file since we read it": re-read and retry.
_CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})


class FsspecStore(HomeFile):
    """A file written plainly under a lock in this process: for ``memory://`` and single writers."""

    def __init__(self, home: Any, name: str = MEMORY_FILE) -> None:
        super().__init__(home, name)
        self._lock = process_lock(str(self.fs.unstrip_protocol(self.path)))

    def get(self, path: str) -> tuple[bytes | None, None]:
        try:
            return bytes(self.fs.cat_file(path, start=0, end=READ_LIMIT)), None
        except FileNotFoundError:
            return None, None
        except Exception as error:
            if is_empty_range_error(error):
                return b"", None
            raise

    def delete(self, path: str) -> None:
        self.fs.rm_file(path)

    def update(self, plan: Plan) -> Change:
        with self._lock:
            change = plan(self.read())
            if change.data is not None:
                with storage_action(self.fs, self.location, self.name, "write", self.path):
                    self.fs.pipe_file(self.path, change.data)
            return change

    def file(self, name: str) -> FsspecStore:
        return FsspecStore(self.home, name)

    def rename(self, name: str) -> Moved:
        target = self.file(name)
        with self._lock:
            if self.read() is None:
                return "missing"
            if target.read() is not None:
                return "exists"
            with storage_action(self.fs, self.location, self.name, "rename", self.path, target.path):
                self.fs.mv(self.path, target.path)
            return "renamed"


class LoopedStore(CompareAndSwapStore):
    """A store whose primitives are coroutines of an async filesystem (s3fs, adlfs, gcsfs), run on
    its loop; a ``lineage`` or ``version`` of ``None`` makes a plain put or delete."""

    #: The coroutine functions each store writes: get; put and delete, at a version or plainly.
    _get: Callable[[str], Coroutine[Any, Any, Stored]]
    _put: Callable[[str, bytes, str | None, str | None], Coroutine[Any, Any, None]]
    _delete: Callable[[str, str | None], Coroutine[Any, Any, None]]

    def _conflict(self, error: Exception, *, deleting: bool) -> bool:
        """Whether ``error`` is the server refusing the condition (a delete's: or the object gone)."""
        raise NotImplementedError

    def get(self, path: str) -> Stored:
        result: Stored = run_on_loop(self.fs, self._get, path)
        return result

    def put(self, path: str, data: bytes, version: str | None, lineage: str | None = None) -> bool:
        return self._conditional(self._put, path, data, version, lineage)

    put_with_lineage = put

    def delete(self, path: str) -> None:
        run_on_loop(self.fs, self._delete, path, None)

    def delete_if(self, path: str, version: str) -> bool:
        return self._conditional(self._delete, path, version, deleting=True)

    def _conditional(
        self, call: Callable[..., Coroutine[Any, Any, None]], *args: Any, deleting: bool = False
    ) -> bool:
        """Run ``call`` on the filesystem's loop: ``False`` if the server refused its condition."""
        try:
            run_on_loop(self.fs, call, *args)
        except Exception as error:
            if self._conflict(error, deleting=deleting):
                return False
            raise
        return True


class S3Store(LoopedStore):
    """An object on S3 (s3fs): one GET gives the bytes and ETag; the PUT carries ``If-Match``."""

    conditions = ("If-None-Match: *", "If-Match")
    stale_version = '"00000000000000000000000000000000"'

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        bucket, key, _ = self.fs.split_path(path)
        return await self.fs._call_s3(method, Bucket=bucket, Key=key, **kwargs)

    async def _get(self, path: str) -> Stored:
        try:
            response = await self._call("get_object", path)
        except FileNotFoundError:
            return Stored(None, None)
        data = b""
        async with response["Body"] as body:
            while len(data) < READ_LIMIT:
                chunk = await body.read(READ_LIMIT - len(data))
                if not chunk:
                    break
                data += chunk
        lineage = parse_lineage(response.get("Metadata", {}).get(LINEAGE_KEY))
        return Stored(data, str(response["ETag"]), lineage)

    async def _put(self, path: str, data: bytes, version: str | None, lineage: str | None) -> None:
        condition: dict[str, Any] = {"IfMatch": version} if version is not None else {"IfNoneMatch": "*"}
        if lineage is not None:
            condition["Metadata"] = {LINEAGE_KEY: lineage}
        await self._call("put_object", path, Body=data, **condition)

    async def _delete(self, path: str, version: str | None) -> None:
        await self._call("delete_object", path, **({} if version is None else {"IfMatch": version}))

    def _conflict(self, error: Exception, *, deleting: bool) -> bool:
        if deleting and isinstance(error, FileNotFoundError):
            return True
        for candidate in (error, error.__cause__):  # s3fs keeps botocore's ClientError as the cause
            response = getattr(candidate, "response", None)
            if isinstance(response, dict) and response.get("Error", {}).get("Code") in _CONFLICT_CODES:
                return True
        return False


class AzureBlobStore(LoopedStore):
    """A blob (adlfs): the ETag comes with the bytes; the upload carries ``If-Match``."""

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
                if not is_empty_range_error(error):
                    raise
                # an empty blob: unranged, as the SDK handles that (the bytes are capped below)
                downloader = await client.download_blob()
        except ResourceNotFoundError:
            return Stored(None, None)
        data = await downloader.read(READ_LIMIT)
        properties = downloader.properties
        lineage = parse_lineage((properties.metadata or {}).get(AZURE_LINEAGE_KEY))
        return Stored(bytes(data), str(properties.etag), lineage)

    async def _put(self, path: str, data: bytes, version: str | None, lineage: str | None) -> None:
        from azure.core import MatchConditions  # noqa: PLC0415

        if version is None:
            condition: dict[str, Any] = {"overwrite": False}  # sends If-None-Match: *
        else:
            condition = {"overwrite": True, "etag": version, "match_condition": MatchConditions.IfNotModified}
        if lineage is not None:
            condition["metadata"] = {AZURE_LINEAGE_KEY: lineage}
        await self._client(path).upload_blob(data, **condition)

    async def _delete(self, path: str, version: str | None) -> None:
        from azure.core import MatchConditions  # noqa: PLC0415

        condition = (
            {} if version is None else {"etag": version, "match_condition": MatchConditions.IfNotModified}
        )
        await self._client(path).delete_blob(**condition)

    def _conflict(self, error: Exception, *, deleting: bool) -> bool:
        from azure.core import exceptions  # noqa: PLC0415

        refused = exceptions.ResourceNotFoundError if deleting else exceptions.ResourceExistsError
        return isinstance(error, exceptions.ResourceModifiedError | refused)


class GcsStore(LoopedStore):
    """An object on GCS (gcsfs): the bytes are pinned to the generation read with the metadata."""

    conditions = ("ifGenerationMatch=0", "ifGenerationMatch")
    stale_version = "1"

    async def _get(self, path: str) -> Stored:
        bucket, key, _ = self.fs.split_path(path)
        while True:
            try:
                meta = await self.fs._call("GET", "b/{}/o/{}", bucket, key, json_out=True)
            except FileNotFoundError:
                return Stored(None, None)
            generation = str(meta["generation"])
            lineage = parse_lineage((meta.get("metadata") or {}).get(LINEAGE_KEY))
            if int(meta.get("size", 0)) == 0:
                return Stored(b"", generation, lineage)  # a ranged read of nothing is not satisfiable
            headers = {"Range": f"bytes=0-{READ_LIMIT - 1}"}
            try:
                _, data = await self.fs._call(
                    "GET", "b/{}/o/{}", bucket, key, alt="media", generation=generation, headers=headers
                )
            except FileNotFoundError:
                continue  # replaced between the two requests: read the new generation
            return Stored(bytes(data), generation, lineage)

    async def _put(self, path: str, data: bytes, version: str | None, lineage: str | None) -> None:
        from gcsfs.core import quote  # noqa: PLC0415  (optional backend)

        bucket, key, _ = self.fs.split_path(path)
        await self.fs._call(
            "POST",
            f"{self.fs._location}/upload/storage/v1/b/{quote(bucket)}/o",
            uploadType="multipart",  # a multipart upload, as gcsfs's own: every server checks
            ifGenerationMatch=version if version is not None else "0",  # its preconditions
            data=_multipart(key, data, lineage),
            headers={"Content-Type": f'multipart/related; boundary="{_BOUNDARY}"'},
            json_out=True,
        )

    async def _delete(self, path: str, version: str | None) -> None:
        bucket, key, _ = self.fs.split_path(path)
        condition = {} if version is None else {"ifGenerationMatch": version}
        await self.fs._call("DELETE", "b/{}/o/{}", bucket, key, **condition)

    def _conflict(self, error: Exception, *, deleting: bool) -> bool:
        """gcsfs spells 412 Precondition Failed ``FileExistsError`` (and 404 ``FileNotFoundError``)."""
        return isinstance(error, (FileExistsError, FileNotFoundError) if deleting else FileExistsError)


_BOUNDARY = "toolnexus-8b1c4e2f"


def _multipart(key: str, data: bytes, lineage: str | None) -> bytes:
    """The object's name and metadata (JSON) and its bytes in one ``multipart/related`` body."""
    resource: dict[str, object] = {"name": key}
    if lineage is not None:
        resource["metadata"] = {LINEAGE_KEY: lineage}
    metadata = json.dumps(resource)
    head = (
        f"--{_BOUNDARY}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n"
        f"--{_BOUNDARY}\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    return head.encode() + data + f"\r\n--{_BOUNDARY}--\r\n".encode()
