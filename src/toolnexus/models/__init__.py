"""Model adapters: the loop's neutral messages in, the provider's official SDK underneath.

The SDKs are optional extras (``toolnexus[openai]``, ``toolnexus[anthropic]``), imported only
when a model is created.
"""

from toolnexus.models.anthropic import AnthropicModel, anthropic_tool_result
from toolnexus.models.openai import OpenAIChatModel
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
    "anthropic_tool_result",
]
