"""A file on S3 (s3fs): one GET gives the bytes and their ETag together; the PUT is conditional
(``If-Match: <etag>``, or ``If-None-Match: *`` when creating). AWS S3 answers a lost race with
412 or 409; on those the edit is re-read and re-applied."""

from __future__ import annotations

from typing import Any

from toolnexus._aio import run_on_loop
from toolnexus.stores.base import READ_LIMIT, CompareAndSwapStore

__all__ = ["S3Store"]

#: S3 error codes meaning "someone else changed the file since we read it": re-read and retry.
_CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})


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

    def get(self, path: str) -> tuple[bytes | None, str | None]:
        bucket, key, _ = self.fs.split_path(path)
        result: tuple[bytes | None, str | None] = run_on_loop(self.fs, self._get, bucket, key)
        return result

    async def _get(self, bucket: str, key: str) -> tuple[bytes | None, str | None]:
        try:
            response = await self.fs._call_s3("get_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            return None, None
        data = b""
        async with response["Body"] as body:
            while len(data) < READ_LIMIT:
                chunk = await body.read(READ_LIMIT - len(data))
                if not chunk:
                    break
                data += chunk
        return data, str(response["ETag"])

    def put(self, path: str, data: bytes, version: str | None) -> bool:
        condition = {"IfMatch": version} if version is not None else {"IfNoneMatch": "*"}
        try:
            self._call("put_object", path, Body=data, **condition)
        except Exception as error:
            if _is_conflict(error):
                return False
            raise
        return True

    def delete(self, path: str) -> None:
        self._call("delete_object", path)
