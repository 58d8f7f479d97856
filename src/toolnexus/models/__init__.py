"""Model adapters: the neutral messages and tools in, each provider's wire format and official SDK
underneath (optional extras, ``toolnexus[openai]``/``[anthropic]``, imported when a model is made)."""

from toolnexus.models.anthropic import AnthropicModel, anthropic_tool, anthropic_tool_result
from toolnexus.models.openai import OpenAIChatModel, openai_tool
from toolnexus.runtime.messages import (
    AssistantMessage,
    Message,
    Model,
    ModelError,
    ModelReply,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
)

__all__ = [
    "AnthropicModel",
    "AssistantMessage",
    "Message",
    "Model",
    "ModelError",
    "ModelReply",
    "OpenAIChatModel",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "anthropic_tool",
    "anthropic_tool_result",
    "openai_tool",
]
