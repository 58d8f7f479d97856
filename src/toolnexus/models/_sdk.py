"""What both SDK adapters share: the optional SDK's import, one client per event loop (an httpx
pool belongs to the loop that opened it, and the blocking forms each run a loop of their own), and
SDK exceptions as one-line :class:`ModelError` messages."""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

from toolnexus.runtime.messages import ModelError


def sorted_keys(value: Any) -> Any:
    """Keys sorted, so a tool is the same bytes in every request (prompt caches match bytes)."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [sorted_keys(item) for item in value]
    return value


def model_error(provider: str, endpoint: str, error: BaseException) -> ModelError:
    """One line: provider, endpoint, HTTP status when there is one, and what the server said."""
    status = getattr(error, "status_code", None)
    body = getattr(error, "body", None)
    detail = str(error)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            detail = inner["message"]
    detail = " ".join(detail.split()) or type(error).__name__
    prefix = f"{provider} at {endpoint}" + (f": HTTP {status}" if status is not None else "")
    return ModelError(f"{prefix}: {detail}")


class SDKModel:
    """A subclass names its provider, client class, endpoint and the SDK's failure exceptions."""

    provider = ""
    client_class = ""
    default_endpoint = ""
    error_class = ""  # the SDK's base exception
    other_errors: tuple[type[BaseException], ...] = ()

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 2,
        timeout: float | None = None,
        **options: Any,
    ) -> None:
        sdk = self.provider  # the SDK's module, and the extra that installs it
        try:
            self._sdk = importlib.import_module(sdk)
        except ImportError as error:
            raise ImportError(
                f"the {sdk!r} package is needed for this model: pip install 'toolnexus[{sdk}]'"
            ) from error
        self.model, self.base_url, self.options = model, base_url, options
        self._client_options: dict[str, Any] = dict(
            base_url=base_url, api_key=api_key, max_retries=max_retries
        )
        if timeout is not None:  # else the SDK's default
            self._client_options["timeout"] = timeout
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def endpoint(self) -> str:
        """Where requests go, for error messages: ``base_url``, the SDK's variable, or the default."""
        return self.base_url or os.environ.get(f"{self.provider.upper()}_BASE_URL") or self.default_endpoint

    async def request(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """``await call(client)`` on this loop's client; failures as one-line :class:`ModelError`."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = getattr(self._sdk, self.client_class)(**self._client_options), loop
        try:
            return await call(self._client)
        except (getattr(self._sdk, self.error_class), *self.other_errors) as error:
            raise model_error(self.provider, self.endpoint, error) from error

    async def aclose(self) -> None:
        """Close this loop's SDK client and its connections; the next call opens a new one."""
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"
