"""What both SDK adapters share: importing the optional SDK, one client per event loop, and
turning SDK exceptions into one-line :class:`ModelError` messages."""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from toolnexus.runtime.messages import ModelError

__all__ = ["LoopBoundClient", "SDKModel", "import_sdk", "model_error", "sdk_options", "sorted_keys"]


def import_sdk(module: str, extra: str) -> ModuleType:
    """The provider SDK, or an ImportError that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"the {module!r} package is needed for this model: pip install 'toolnexus[{extra}]'"
        ) from error


def sdk_options(
    *, base_url: str | None, api_key: str | None, max_retries: int, timeout: float | None
) -> dict[str, Any]:
    """Client keyword arguments both SDKs take; ``timeout`` only when given (the SDK default stays)."""
    options: dict[str, Any] = {"base_url": base_url, "api_key": api_key, "max_retries": max_retries}
    if timeout is not None:
        options["timeout"] = timeout
    return options


def sorted_keys(value: Any) -> Any:
    """A copy of a JSON value with every object's keys sorted, so one tool declaration is sent as
    the same bytes in every request and every process (prompt caches match prefixes byte for byte)."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [sorted_keys(item) for item in value]
    return value


class LoopBoundClient:
    """An SDK async client per event loop: an httpx pool belongs to the loop that opened it, and
    ``run_sync`` / the sync session run each call on a loop of their own."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None

    def get(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = self._factory(), loop
        return self._client

    async def aclose(self) -> None:
        """Close this loop's client (its connections); the next call opens a new one."""
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            await client.close()


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
    """What both adapters share: the SDK import, a client per loop, the endpoint, error mapping.

    A subclass names its ``provider`` (which is also its SDK's module and its extra),
    ``client_class``, ``default_endpoint`` and the SDK exceptions that mean "the provider failed".
    """

    provider = ""
    client_class = ""
    default_endpoint = ""

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
        self._sdk = import_sdk(self.provider, self.provider)
        self.model, self.base_url, self.options = model, base_url, options
        client_options = sdk_options(
            base_url=base_url, api_key=self.default_key(api_key), max_retries=max_retries, timeout=timeout
        )
        self._client = LoopBoundClient(lambda: getattr(self._sdk, self.client_class)(**client_options))

    def default_key(self, api_key: str | None) -> str | None:
        """The key to give the client (``None``: the SDK reads its environment variable)."""
        return api_key

    def provider_errors(self) -> tuple[type[BaseException], ...]:
        raise NotImplementedError

    @property
    def min_cacheable_tokens(self) -> int | None:
        """The shortest prefix the provider caches for this model (``None``: caching is off), so
        an agent can say once when its soul's stable part is too short to be cached."""
        return None

    @property
    def endpoint(self) -> str:
        """Where requests go, for error messages: ``base_url``, the SDK's variable, or the default."""
        return self.base_url or os.environ.get(f"{self.provider.upper()}_BASE_URL") or self.default_endpoint

    async def request(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """``await call(client)``, with the provider's failures as one-line :class:`ModelError`."""
        try:
            return await call(self._client.get())
        except self.provider_errors() as error:
            raise model_error(self.provider, self.endpoint, error) from error

    async def aclose(self) -> None:
        """Close the SDK client's connections; the blocking forms (``run_sync``, the sync session)
        do it for you when they finish."""
        await self._client.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"
