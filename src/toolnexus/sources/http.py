"""Homes over HTTP(S): each name one ranged GET, its body read to ``limit + 1`` bytes whatever the
server does with ``Range`` (``python -m http.server`` ignores it)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from toolnexus.sources.base import Match, Reading
from toolnexus.sources.fsspec import FsspecSource


class HttpSource(FsspecSource):
    """A home on an fsspec HTTP filesystem: ``HttpSource(HTTPFileSystem(), "https://host/aster")``."""

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        if self._looks_like_bundle():
            return super().read_folder(folder, limit, match=match)
        return Reading(self.location, {})

    async def _fetch_coroutine(self, names: Sequence[str], limit: int) -> list[Any]:
        session = await self.fs.set_session()
        gets = (self._capped_get(session, self.path_of(name), limit + 1) for name in names)
        return list(await asyncio.gather(*gets))

    async def _capped_get(self, session: Any, url: str, end: int) -> Any:
        kwargs = dict(self.fs.kwargs)
        headers = {**kwargs.pop("headers", {}), "Range": f"bytes=0-{end - 1}"}
        try:
            async with session.get(self.fs.encode_url(url), headers=headers, **kwargs) as response:
                if response.status == 416:
                    return b""
                self.fs._raise_not_found_for_status(response, url)
                data = bytearray()
                async for chunk in response.content.iter_chunked(64 * 1024):
                    data += chunk
                    if len(data) >= end:
                        break  # leaving the block closes the connection: the rest is never read
                return bytes(data[:end])
        except Exception as error:
            return error
