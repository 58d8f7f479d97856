"""A file on Google Cloud Storage (gcsfs): the object's generation is read with its metadata, the
bytes are read pinned to that generation, and the upload carries ``ifGenerationMatch`` (``0``:
must not exist yet), which GCS answers with 412 when another writer got there first. The lineage
(:mod:`.lineage`) is the object's ``toolnexus-edits`` custom metadata, read with the generation."""

from __future__ import annotations

import json

from toolnexus._aio import run_on_loop
from toolnexus.stores.base import READ_LIMIT
from toolnexus.stores.lineage import Stored, parse_lineage
from toolnexus.stores.looped import LoopedStore

__all__ = ["GcsStore"]

_LINEAGE_KEY = "toolnexus-edits"


class GcsStore(LoopedStore):
    """A file in a GCS bucket, written with generation preconditions through gcsfs's client."""

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
            lineage = parse_lineage((meta.get("metadata") or {}).get(_LINEAGE_KEY))
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

    async def _put(self, path: str, data: bytes, version: str | None, lineage: str | None) -> bool:
        from gcsfs.core import quote  # noqa: PLC0415  (optional backend)

        bucket, key, _ = self.fs.split_path(path)
        url = f"{self.fs._location}/upload/storage/v1/b/{quote(bucket)}/o"
        try:
            await self.fs._call(
                "POST",
                url,
                uploadType="multipart",  # a multipart upload, as gcsfs's own: every server checks
                ifGenerationMatch=version if version is not None else "0",  # its preconditions
                data=_multipart(key, data, lineage),
                headers={"Content-Type": f'multipart/related; boundary="{_BOUNDARY}"'},
                json_out=True,
            )
        except FileExistsError:  # gcsfs's spelling of 412 Precondition Failed
            return False
        return True

    async def _delete(self, path: str, **conditions: str) -> None:
        bucket, key, _ = self.fs.split_path(path)
        await self.fs._call("DELETE", "b/{}/o/{}", bucket, key, **conditions)

    def delete_if(self, path: str, version: str) -> bool:
        try:
            run_on_loop(self.fs, self._delete, path, ifGenerationMatch=version)
        except (FileExistsError, FileNotFoundError):  # gcsfs's spellings of 412 and 404
            return False
        return True


_BOUNDARY = "toolnexus-8b1c4e2f"


def _multipart(key: str, data: bytes, lineage: str | None) -> bytes:
    """The object's name and metadata (JSON) and its bytes in one ``multipart/related`` body."""
    resource: dict[str, object] = {"name": key}
    if lineage is not None:
        resource["metadata"] = {_LINEAGE_KEY: lineage}
    metadata = json.dumps(resource)
    head = (
        f"--{_BOUNDARY}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n"
        f"--{_BOUNDARY}\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    return head.encode() + data + f"\r\n--{_BOUNDARY}--\r\n".encode()
