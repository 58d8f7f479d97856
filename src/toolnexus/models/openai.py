"""``OpenAIChatModel``: Chat Completions with tools through the official ``openai`` SDK, on any
OpenAI-compatible server. OpenAI caches byte-identical prefixes on the machine a request is routed
to: the soul and the tools go as the same bytes every turn, and ``prompt_cache_key`` routes one
persona's requests to the same machine."""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
from collections.abc import Sequence
from typing import Any, Literal

from toolnexus.models._sdk import SDKModel, sorted_keys
from toolnexus.runtime.messages import (
    AssistantMessage,
    Message,
    ModelReply,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
)


class _Derived(enum.Enum):
    DERIVED = "derived"

    def __repr__(self) -> str:
        return "DERIVED"


#: ``prompt_cache_key``'s default: derived from the persona and its soul (:func:`derived_cache_key`).
DERIVED = _Derived.DERIVED

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def derived_cache_key(system: str) -> str:
    """``NAME-HASH`` of the persona and the soul's stable part: unchanged while that part is."""
    persona = getattr(system, "persona", None) or "toolnexus"
    stable = getattr(system, "stable", system)
    digest = hashlib.sha256(str(stable).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{_UNSAFE.sub('_', persona)[:40]}-{digest}"


def openai_tool(tool: ToolSpec) -> dict[str, Any]:
    """The Chat Completions ``tools`` entry of a tool (for a loop of your own)."""
    function = {"name": tool.name, "description": tool.description, "parameters": tool.input_schema}
    return {"type": "function", "function": function}


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """A tool call's JSON arguments as a dict, or ``({}, why not)`` for the model to fix."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as error:
        return {}, f"error: the arguments are not valid JSON ({error}); send a JSON object."
    if not isinstance(value, dict):
        return {}, f"error: the arguments must be a JSON object, not {type(value).__name__}."
    return value, None


def to_openai_messages(system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The neutral transcript as Chat Completions messages, the soul first as the system message."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": str(system)}] if system else []
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
    details = getattr(usage, "prompt_tokens_details", None)
    read = getattr(details, "cached_tokens", None) or 0
    written = getattr(details, "cache_write_tokens", None) or 0
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, read, written)


class OpenAIChatModel(SDKModel):
    """A model behind the Chat Completions API; a ``base_url`` without a key gets a placeholder, as
    local servers need none. ``options`` go to every ``create`` call."""

    provider = "openai"
    client_class = "AsyncOpenAI"
    default_endpoint = "https://api.openai.com/v1"
    error_class = "OpenAIError"
    min_cacheable_tokens = 1024  # OpenAI caches no shorter prefix

    def __init__(
        self, model: str, *, prompt_cache_key: str | Literal[_Derived.DERIVED] | None = DERIVED, **client: Any
    ) -> None:
        if not (prompt_cache_key is None or prompt_cache_key is DERIVED or isinstance(prompt_cache_key, str)):
            kind = type(prompt_cache_key).__name__
            raise TypeError(f"prompt_cache_key must be a string or None, not {kind}")
        if client.get("base_url") is not None and client.get("api_key") is None:
            client["api_key"] = None if os.environ.get("OPENAI_API_KEY") else "unused"
        super().__init__(model, **client)
        self.prompt_cache_key = prompt_cache_key

    def cache_key(self, system: str) -> str | None:
        """The ``prompt_cache_key`` a request under ``system`` carries (``None``: none)."""
        if self.prompt_cache_key is DERIVED:
            return derived_cache_key(system) if system else None
        return self.prompt_cache_key

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        request: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(system, messages)}
        if tools:
            request["tools"] = [sorted_keys(openai_tool(tool)) for tool in tools]
        key = self.cache_key(system)
        if key is not None:
            request["prompt_cache_key"] = key
        answer = await self.request(lambda client: client.chat.completions.create(**request, **self.options))
        return from_openai_completion(answer)
