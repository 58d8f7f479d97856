"""``AnthropicModel``: the Messages API with tools through the official ``anthropic`` SDK.

Prompt caching puts ``cache_control`` breakpoints (four at most) after the tools, the soul's stable
part, the whole soul and the latest message: a turn reads the earlier turns from the cache, a new
session the tools and the stable part, even after a memory edit."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import takewhile
from typing import Any, Literal

from toolnexus._reply import reply_is_error
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

#: The shortest prefix Anthropic caches, per model family as its documentation lists it: the first
#: pattern found in the model's name wins; any other model (Sonnet, older Opus), 1,024 tokens.
MIN_CACHEABLE_TOKENS = ((r"opus-4-[5-9]", 4096), (r"haiku-4-[5-9]", 4096), (r"haiku", 2048), (r"", 1024))

#: The built-in tool types Anthropic has for a tool's ``native_kind``.
NATIVE_TOOL_TYPES = {"memory": "memory_20250818"}


def anthropic_tool(tool: ToolSpec, *, native_memory: bool = True) -> dict[str, Any]:
    """A tool's ``tools`` entry (for a loop of your own): the memory tool as the built-in Claude
    is trained on, unless ``native_memory=False``."""
    native = NATIVE_TOOL_TYPES.get(getattr(tool, "native_kind", None) or "")
    if native_memory and native is not None:
        return {"type": native, "name": tool.name}
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


def _tool_result_block(tool_use_id: str, text: str, is_error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    if is_error:
        block["is_error"] = True  # left out otherwise, as the SDK's own tool runner does
    return block


def anthropic_tool_result(tool_use: Any, result: object) -> dict[str, Any]:
    """The block answering a ``tool_use`` block, for a loop of your own (errors flagged as the SDK does)."""
    tool_use_id = tool_use.get("id") if isinstance(tool_use, dict) else getattr(tool_use, "id", None)
    if not isinstance(tool_use_id, str):
        raise TypeError(f"anthropic_tool_result needs a tool_use block with an id, not {tool_use!r}")
    return _tool_result_block(tool_use_id, str(result), reply_is_error(result))


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The neutral transcript as Messages API turns; tool results ride in the next user turn."""
    wire: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return  # the API refuses empty turns (an assistant turn with no text and no calls)
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})

    for message in messages:
        if isinstance(message, UserMessage):
            add("user", [{"type": "text", "text": message.text}])
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
            blocks += [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                for call in message.tool_calls
            ]
            add("assistant", blocks)
        elif isinstance(message, ToolResult):
            add("user", [_tool_result_block(message.call_id, message.text, message.is_error)])
    return wire


def system_blocks(system: str, marker: dict[str, Any]) -> list[dict[str, Any]]:
    """The soul as text blocks, one per part, with a breakpoint after the stable part and the whole."""
    parts = getattr(system, "parts", None) or ((system, True),)
    if "".join(text for text, _ in parts) != system:  # not a soul's parts: never send other text
        parts = ((system, True),)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": str(text)} for text, _ in parts]
    stable = sum(1 for _ in takewhile(lambda part: part[1], parts))
    for index in {stable - 1, len(blocks) - 1} - {-1}:
        blocks[index]["cache_control"] = marker
    return blocks


def from_anthropic_message(message: Any) -> ModelReply:
    """A Messages API response as a neutral reply: its text blocks joined, its tool_use blocks."""
    texts, calls = [], []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            problem = None if isinstance(block.input, dict) else "error: the input must be a JSON object."
            calls.append(ToolCall(block.id, block.name, arguments, problem))
    return ModelReply("".join(texts), tuple(calls), _usage(getattr(message, "usage", None)))


def _usage(usage: Any) -> Usage:
    """Anthropic's ``input_tokens`` leaves the cache out; :class:`Usage` counts every prompt token."""
    if usage is None:
        return Usage()
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage((usage.input_tokens or 0) + read + written, usage.output_tokens or 0, read, written)


class AnthropicModel(SDKModel):
    """A Claude model behind the Messages API. ``cache_ttl``: how long a cache entry lives after its
    last use (a write costs 1.25x the input price, or 2x for an hour); ``None`` sends no
    ``cache_control``, for servers without one. ``options`` go to every ``create`` call."""

    provider = "anthropic"
    client_class = "AsyncAnthropic"
    default_endpoint = "https://api.anthropic.com"
    error_class = "AnthropicError"
    other_errors = (TypeError,)  # the SDK's word for "no API key or other credentials found"

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int = 4096,  # the Messages API requires it: room for a long answer
        native_memory: bool = True,
        cache_ttl: Literal["5m", "1h"] | None = "5m",
        **client: Any,
    ) -> None:
        if cache_ttl not in ("5m", "1h", None):
            raise ValueError(f"cache_ttl must be '5m', '1h' or None, not {cache_ttl!r}")
        super().__init__(model, **client)
        self.max_tokens, self.native_memory, self.cache_ttl = max_tokens, native_memory, cache_ttl

    @property
    def min_cacheable_tokens(self) -> int | None:
        if self.cache_ttl is None:
            return None
        return next(tokens for pattern, tokens in MIN_CACHEABLE_TOKENS if re.search(pattern, self.model))

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        wire = to_anthropic_messages(messages)
        request: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": wire}
        declared = [sorted_keys(anthropic_tool(tool, native_memory=self.native_memory)) for tool in tools]
        if self.cache_ttl is None:
            if system:
                request["system"] = str(system)
        else:
            # 5 minutes is the API's default: left implicit, as Anthropic-compatible servers
            # that predate ``ttl`` accept it
            marker = {"type": "ephemeral"} | ({"ttl": self.cache_ttl} if self.cache_ttl != "5m" else {})
            if system:
                request["system"] = system_blocks(system, marker)
            if declared:
                declared[-1]["cache_control"] = marker
            if wire:  # on the conversation's last block: the next turn reads everything up to it
                wire[-1]["content"][-1] = {**wire[-1]["content"][-1], "cache_control": marker}
        if declared:
            request["tools"] = declared
        message = await self.request(lambda client: client.messages.create(**request, **self.options))
        return from_anthropic_message(message)
