"""Single S3 GETs with the headers s3fs's file API hides: Content-Range, ETag, conditions.

s3fs answers ``cat_file`` with bytes only. Two performance paths need more of the response: a
bundle read from its tail needs the object's size (``Content-Range``) and ETag from the same
response, and a cache needs ``If-None-Match`` (an unchanged object costs a bodiless 304) and
``If-Match`` (a later range of the same object, or an error if it was replaced meanwhile). Both
go through ``fs._call_s3("get_object", …)``, s3fs's own retrying, credential-refreshing call.
"""

from __future__ import annotations

from typing import Any

from toolnexus.sources.freshness import NOT_MODIFIED, NotModified
from toolnexus.sources.remote import Fetched, ObjectChangedError

__all__ = ["NOT_MODIFIED", "NotModified", "ObjectChangedError", "S3Object", "get_object"]

#: One GET's body, ETag and the whole object's size (the name S3 code has always used).
S3Object = Fetched


def _error_code(error: BaseException) -> str:
    """The S3 error code (``"304"``, ``"PreconditionFailed"``, ``"InvalidRange"``) behind an error."""
    cause = error.__cause__ or error
    response = getattr(cause, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


async def get_object(
    fs: Any, path: str, byte_range: str, *, if_none_match: str | None = None, if_match: str | None = None
) -> S3Object | NotModified:
    """GET ``path`` with ``Range: byte_range`` and the given conditions.

    Returns :data:`NOT_MODIFIED` for a 304 (the ETag still matches: nothing was sent), an empty
    :class:`S3Object` for a range an empty object cannot satisfy (416), raises
    :class:`ObjectChangedError` for a failed ``If-Match`` (412) and ``FileNotFoundError`` for a
    missing key; other failures propagate as s3fs raises them.
    """
    from s3fs.core import _error_wrapper  # noqa: PLC0415  (s3fs is an optional extra)

    bucket, key, version = fs.split_path(path)
    arguments: dict[str, Any] = {"Bucket": bucket, "Key": key, "Range": byte_range}
    if version:
        arguments["VersionId"] = version
    if if_none_match is not None:
        arguments["IfNoneMatch"] = if_none_match
    if if_match is not None:
        arguments["IfMatch"] = if_match

    async def call_and_read() -> tuple[dict[str, Any], bytes]:
        response = await fs._call_s3("get_object", **arguments)
        body = response["Body"]
        try:
            return response, bytes(await body.read())
        finally:
            body.close()

    try:
        # Retried as s3fs's own cat_file is: a body cut short is read again, whole.
        response, data = await _error_wrapper(call_and_read, retries=fs.retries)
    except FileNotFoundError:
        raise
    except OSError as error:
        code = _error_code(error)
        if code in ("304", "NotModified"):
            return NOT_MODIFIED
        if code == "PreconditionFailed":
            raise ObjectChangedError(f"{path} changed while it was being read ({error})") from error
        if code == "InvalidRange":
            return S3Object(b"", None, 0)
        raise
    return S3Object(data, response.get("ETag"), _object_size(response, len(data)))


def _object_size(response: dict[str, Any], received: int) -> int:
    """``Content-Range: bytes a-b/SIZE`` gives the size; a 200 without it carried the whole object."""
    content_range = response.get("ContentRange")
    if isinstance(content_range, str) and "/" in content_range:
        total = content_range.rsplit("/", 1)[1]
        if total.isdigit():
            return int(total)
    return received
