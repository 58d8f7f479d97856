"""A file on S3 (s3fs): one GET gives the bytes and their ETag together; the PUT is conditional
(``If-Match: <etag>``, or ``If-None-Match: *`` when creating). AWS S3 answers a lost race with
412 or 409; on those the edit is re-read and, unless it turns out to have been applied after all
(:mod:`.lineage`), planned again. The lineage travels as ``x-amz-meta-toolnexus-edits``."""

from __future__ import annotations

from typing import Any

from toolnexus._aio import run_on_loop
from toolnexus.stores.base import READ_LIMIT, CompareAndSwapStore
from toolnexus.stores.lineage import Stored, parse_lineage

__all__ = ["S3Store"]

#: S3 error codes meaning "someone else changed the file since we read it": re-read and retry.
_CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})

#: The user-metadata key of the lineage (sent as ``x-amz-meta-toolnexus-edits``).
_LINEAGE_KEY = "toolnexus-edits"


def _is_conflict(error: BaseException) -> bool:
    """s3fs translates ClientErrors but keeps the original as ``__cause__``."""
    for candidate in (error, error.__cause__):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code") in _CONFLICT_CODES:
            return True
    return False


class S3Store(CompareAndSwapStore):
    """A file on S3: conditional PUTs against the ETag of the bytes that were read."""

    conditions = ("If-None-Match: *", "If-Match")
    stale_version = '"00000000000000000000000000000000"'

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        bucket, key, _ = self.fs.split_path(path)
        return run_on_loop(self.fs, self.fs._call_s3, method, Bucket=bucket, Key=key, **kwargs)

    def get(self, path: str) -> Stored:
        bucket, key, _ = self.fs.split_path(path)
        result: Stored = run_on_loop(self.fs, self._get, bucket, key)
        return result

    async def _get(self, bucket: str, key: str) -> Stored:
        try:
            response = await self.fs._call_s3("get_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            return Stored(None, None)
        data = b""
        async with response["Body"] as body:
            while len(data) < READ_LIMIT:
                chunk = await body.read(READ_LIMIT - len(data))
                if not chunk:
                    break
                data += chunk
        lineage = parse_lineage(response.get("Metadata", {}).get(_LINEAGE_KEY))
        return Stored(data, str(response["ETag"]), lineage)

    def put(self, path: str, data: bytes, version: str | None) -> bool:
        return self._put(path, data, version, None)

    def put_with_lineage(self, path: str, data: bytes, version: str | None, lineage: str) -> bool:
        return self._put(path, data, version, lineage)

    def _put(self, path: str, data: bytes, version: str | None, lineage: str | None) -> bool:
        condition: dict[str, Any] = {"IfMatch": version} if version is not None else {"IfNoneMatch": "*"}
        if lineage is not None:
            condition["Metadata"] = {_LINEAGE_KEY: lineage}
        try:
            self._call("put_object", path, Body=data, **condition)
        except Exception as error:
            if _is_conflict(error):
                return False
            raise
        return True

    def delete(self, path: str) -> None:
        self._call("delete_object", path)

    def delete_if(self, path: str, version: str) -> bool:
        try:
            self._call("delete_object", path, IfMatch=version)
        except FileNotFoundError:
            return False  # gone already: s3fs's translation of NoSuchKey
        except Exception as error:
            if _is_conflict(error):
                return False
            raise
        return True
