"""Model adapters: the loop's neutral messages in, the provider's official SDK underneath.

The SDKs are optional extras (``toolnexus[openai]``, ``toolnexus[anthropic]``), imported only
when a model is created.
"""

from .anthropic import AnthropicModel
from .base import (
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
from .openai import OpenAIChatModel

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
]
