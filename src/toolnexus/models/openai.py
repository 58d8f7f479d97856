"""``OpenAIChatModel``: Chat Completions with tools through the official ``openai`` SDK.

``base_url`` points it at any OpenAI-compatible server — Ollama (``http://localhost:11434/v1``),
vLLM, llama.cpp, LM Studio, OpenRouter, a LiteLLM proxy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from toolnexus.models._sdk import SDKModel
from toolnexus.runtime.messages import (
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


class OpenAIChatModel(SDKModel):
    """A model behind the Chat Completions API: ``OpenAIChatModel(name, *, base_url=None,
    api_key=None, max_retries=2, timeout=None, **options)``.

    ``api_key`` defaults to ``OPENAI_API_KEY``; with a ``base_url`` and no key at all a placeholder
    is sent, as local servers need none. ``options`` go to every ``create`` call (``temperature``,
    ``max_completion_tokens``, …). Provider failures raise :class:`ModelError`.
    """

    provider = "openai"
    client_class = "AsyncOpenAI"
    default_endpoint = "https://api.openai.com/v1"

    def default_key(self, api_key: str | None) -> str | None:
        if api_key is None and self.base_url is not None and not os.environ.get("OPENAI_API_KEY"):
            return LOCAL_SERVER_KEY
        return api_key

    def provider_errors(self) -> tuple[type[BaseException], ...]:
        return (self._sdk.OpenAIError,)

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        request: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(system, messages)}
        if tools:
            request["tools"] = [tool.openai_tool() for tool in tools]
        completion = await self.request(
            lambda client: client.chat.completions.create(**request, **self.options)
        )
        return from_openai_completion(completion)
