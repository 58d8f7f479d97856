"""``OpenAIChatModel``: Chat Completions with tools through the official ``openai`` SDK.

``base_url`` points it at any OpenAI-compatible server — Ollama (``http://localhost:11434/v1``),
vLLM, llama.cpp, LM Studio, OpenRouter, a LiteLLM proxy.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ._sdk import LoopBoundClient, import_sdk, model_error, sdk_options
from .base import (
    AssistantMessage,
    Message,
    ModelReply,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
    parse_arguments,
)

__all__ = ["OpenAIChatModel"]

#: Sent as the key when a ``base_url`` is given without one: local servers ignore it, but the SDK
#: refuses to start without some key.
LOCAL_SERVER_KEY = "unused"


def to_openai_messages(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The neutral transcript as Chat Completions messages, the soul first as the system message."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message, UserMessage):
            wire.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [_wire_call(call) for call in message.tool_calls]
            wire.append(entry)
        elif isinstance(message, ToolResult):
            wire.append({"role": "tool", "tool_call_id": message.call_id, "content": message.text})
    return wire


def _wire_call(call: ToolCall) -> dict[str, Any]:
    import json  # noqa: PLC0415

    function = {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}
    return {"id": call.id, "type": "function", "function": function}


def from_openai_completion(completion: Any) -> ModelReply:
    """The first choice of a ChatCompletion as a neutral reply."""
    if not completion.choices:
        return ModelReply(usage=_usage(completion))
    message = completion.choices[0].message
    calls = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        if function is None:  # a custom (non-function) tool call: not ours to run
            continue
        arguments, problem = parse_arguments(function.arguments)
        calls.append(ToolCall(call.id, function.name, arguments, problem))
    return ModelReply(message.content or "", tuple(calls), _usage(completion))


def _usage(completion: Any) -> Usage:
    usage = getattr(completion, "usage", None)
    if usage is None:
        return Usage()
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)


class OpenAIChatModel:
    """A model behind the Chat Completions API.

    ``api_key`` defaults to ``OPENAI_API_KEY``; with a ``base_url`` and no key at all a placeholder
    is sent, as local servers need none. ``options`` go to every ``create`` call (``temperature``,
    ``max_completion_tokens``, …). Provider failures raise :class:`ModelError`.
    """

    provider = "openai"

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
        self._sdk = import_sdk("openai", "openai")
        self.model = model
        self.base_url = base_url
        self.options = options
        if api_key is None and base_url is not None and not os.environ.get("OPENAI_API_KEY"):
            api_key = LOCAL_SERVER_KEY
        client_options = sdk_options(
            base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout
        )
        self._client = LoopBoundClient(lambda: self._sdk.AsyncOpenAI(**client_options))

    @property
    def endpoint(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        request: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(system, messages)}
        if tools:
            request["tools"] = [tool.openai_tool() for tool in tools]
        try:
            completion = await self._client.get().chat.completions.create(**request, **self.options)
        except self._sdk.OpenAIError as error:
            raise model_error(self.provider, self.endpoint, error) from error
        return from_openai_completion(completion)

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model!r}, base_url={self.base_url!r})"
