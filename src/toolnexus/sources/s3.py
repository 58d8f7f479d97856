"""Persona homes on S3 through s3fs: the object-store plan (:mod:`.objects`) over
``fs._call_s3("get_object", …)``, which sees the ``Content-Range``, ``ETag`` and conditions that
s3fs's file API hides."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from toolnexus._aio import run_on_loop
from toolnexus._fs import is_hidden
from toolnexus.errors import read_error
from toolnexus.sources.base import read_errors
from toolnexus.sources.children import LIST_PAGE_SIZE, Child, Pages
from toolnexus.sources.freshness import NOT_MODIFIED, NotModified
from toolnexus.sources.objects import Fetched, ObjectChangedError, ObjectClient, ObjectHome
from toolnexus.stores.fsspec import S3Store


class S3Client(ObjectClient):
    """An object on S3, fetched by ranges on s3fs's own loop (and its retries)."""

    async def get(
        self,
        start: int,
        end: int | None = None,
        *,
        if_none_match: str | None = None,
        if_match: str | None = None,
    ) -> Fetched | NotModified:
        from s3fs.core import _error_wrapper  # noqa: PLC0415  (s3fs is an optional extra)

        bucket, key, version = self.fs.split_path(self.path)
        byte_range = f"bytes={start}" if end is None else f"bytes={start}-{end - 1}"
        arguments: dict[str, Any] = {"Bucket": bucket, "Key": key, "Range": byte_range}
        for name, value in (("VersionId", version), ("IfNoneMatch", if_none_match), ("IfMatch", if_match)):
            if value:
                arguments[name] = value

        async def call_and_read() -> tuple[dict[str, Any], bytes]:
            response = await self.fs._call_s3("get_object", **arguments)
            body = response["Body"]
            try:
                return response, bytes(await body.read())
            finally:
                body.close()

        try:  # retried as s3fs's own cat_file is: a body cut short is read again, whole
            response, data = await _error_wrapper(call_and_read, retries=self.fs.retries)
        except FileNotFoundError:
            raise
        except OSError as error:
            answer = getattr(error.__cause__ or error, "response", None)  # botocore's, with the S3 code
            code = str(answer.get("Error", {}).get("Code", "")) if isinstance(answer, dict) else ""
            if code in ("304", "NotModified"):
                return NOT_MODIFIED
            if code == "PreconditionFailed":
                raise ObjectChangedError(f"{self.path} changed while it was being read ({error})") from error
            if code == "InvalidRange":
                return Fetched(b"", None, 0)
            raise
        total = str(response.get("ContentRange") or "").rpartition("/")[2]
        return Fetched(data, response.get("ETag"), int(total) if total.isdigit() else len(data))


class S3Source(ObjectHome):
    """A persona home on S3: ``S3Source(s3fs.S3FileSystem(), "bucket/aster")``."""

    conditional_store = S3Store

    def remote(self, path: str) -> S3Client:
        return S3Client(self.fs, path)

    @classmethod
    def concurrent_options(cls, storage_options: Mapping[str, Any], reads: int) -> dict[str, Any]:
        """botocore keeps 10 connections unless told otherwise: ``reads`` requests in flight
        would queue on the client's own pool."""
        options = dict(storage_options)
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("max_pool_connections", reads)
        return {**options, "config_kwargs": config}

    def _listing(self, folder: str) -> list[str]:
        """One LIST: s3fs's ``find`` looks an empty folder up again unless it lists by ``prefix``."""
        below = f"{self.path.rstrip('/')}/{folder}/".lstrip("/")
        self.fs.invalidate_cache(self.path)
        try:
            found = self.fs.find(self.path, detail=True, prefix=f"{folder}/")
        except FileNotFoundError:
            return []
        except Exception as error:
            raise read_error(error, self.location, folder) from error
        paths = (str(path).removeprefix(below) for path, info in found.items() if info.get("type") == "file")
        return sorted(path for path in paths if path and not is_hidden(path))

    def children(self) -> Pages | None:
        """``ListObjectsV2`` pages as they are asked for (the first now, so a missing prefix fails
        here); nothing under ``path/``: a file is a bundle (``None``), anything else no prefix."""
        pages = self._list_pages()
        first = next(pages, None)
        if first is not None:
            return itertools.chain([first], pages)
        self.fs.invalidate_cache(self.path)
        with read_errors(self.location, missing="no such prefix"):
            kind = self.fs.info(self.path).get("type")
        return None if kind == "file" else iter([])  # a folder marker alone: no children

    def _list_pages(self) -> Pages:
        bucket, key, _ = self.fs.split_path(self.path.rstrip("/"))
        prefix = f"{key}/" if key else ""
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
        seen = False
        while True:
            with read_errors(self.location, missing="no such prefix"):  # a missing bucket
                page = run_on_loop(
                    self.fs, self.fs._call_s3, "list_objects_v2", MaxKeys=LIST_PAGE_SIZE, **request
                )
            folders = [(item["Prefix"].rstrip("/"), True) for item in page.get("CommonPrefixes", ())]
            objects = [(item["Key"], False) for item in page.get("Contents", ()) if item["Key"] != prefix]
            seen = seen or bool(folders or objects)
            if seen:
                yield [
                    Child(key[len(prefix) :], f"{bucket}/{key}", folder)
                    for key, folder in sorted(folders + objects)
                ]
            if not page.get("IsTruncated"):
                return
            request["ContinuationToken"] = page["NextContinuationToken"]
