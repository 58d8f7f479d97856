"""``AnthropicModel``: the Messages API with tools through the official ``anthropic`` SDK.

A tool that offers ``anthropic_memory_tool()`` (the memory tool) is declared as Anthropic's
built-in memory tool by default, the form Claude models are trained on; its calls come back as
``tool_use`` blocks named ``memory`` and the tool runs them natively.
"""

from __future__ import annotations

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
)

__all__ = ["AnthropicModel"]

#: ``max_tokens`` is required by the Messages API; this leaves room for a long answer.
DEFAULT_MAX_TOKENS = 4096


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
            result = {"type": "tool_result", "tool_use_id": message.call_id, "content": message.text}
            add("user", [{**result, "is_error": True} if message.is_error else result])
    return wire


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
    usage = getattr(message, "usage", None)
    tokens = Usage(usage.input_tokens or 0, usage.output_tokens or 0) if usage is not None else Usage()
    return ModelReply("".join(texts), tuple(calls), tokens)


class AnthropicModel(SDKModel):
    """A Claude model behind the Messages API: ``AnthropicModel(name, *, base_url=None,
    api_key=None, max_tokens=4096, native_memory=True, max_retries=2, timeout=None, **options)``.

    ``api_key`` defaults to ``ANTHROPIC_API_KEY``. ``native_memory=False`` declares the memory
    tool as an ordinary tool instead of the built-in one. ``options`` go to every ``create`` call
    (``temperature``, …). Provider failures raise :class:`ModelError`.
    """

    provider = "anthropic"
    client_class = "AsyncAnthropic"
    default_endpoint = "https://api.anthropic.com"

    def __init__(
        self, model: str, *, max_tokens: int = DEFAULT_MAX_TOKENS, native_memory: bool = True, **client: Any
    ) -> None:
        super().__init__(model, **client)
        self.max_tokens = max_tokens
        self.native_memory = native_memory

    def provider_errors(self) -> tuple[type[BaseException], ...]:
        # TypeError: the SDK's word for "no API key or other credentials found"
        return (self._sdk.AnthropicError, TypeError)

    def declare(self, tool: ToolSpec) -> dict[str, Any]:
        """The ``tools`` entry for one tool: the built-in memory declaration where it applies."""
        native = getattr(tool, "anthropic_memory_tool", None)
        if self.native_memory and callable(native):
            declaration: dict[str, Any] = native()
            return declaration
        return tool.anthropic_tool()

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": to_anthropic_messages(messages),
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [self.declare(tool) for tool in tools]
        message = await self.request(lambda client: client.messages.create(**request, **self.options))
        return from_anthropic_message(message)
