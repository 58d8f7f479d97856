"""Compose an AI persona's system prompt — its soul — from the bootstrap files in its home.

>>> from toolnexus.agents import compose_soul
>>> soul, found = compose_soul("examples/aster")  # doctest: +SKIP
"""

from .agent import HEARTBEAT_OK, Agent, AgentTool, agent_from_dir
from .bundling import write_bundle
from .cache import SoulCache
from .errors import BootstrapError
from .loop import RunResult
from .memory import MemoryTool, memory_tool
from .models import AnthropicModel, ModelError, ModelReply, OpenAIChatModel, ToolCall, Usage
from .session import Session, SyncSession
from .soul import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, TRUNCATION_NOTICE, FileReport, SoulReport
from .sources import BootstrapSource, DictSource, LayeredSource, SourceBase
from .surface import compose_soul, compose_soul_async, inspect_soul
from .tools import Tool

__all__ = [
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "TRUNCATION_NOTICE",
    "Agent",
    "AgentTool",
    "AnthropicModel",
    "BootstrapError",
    "BootstrapSource",
    "DictSource",
    "FileReport",
    "LayeredSource",
    "MemoryTool",
    "ModelError",
    "ModelReply",
    "OpenAIChatModel",
    "RunResult",
    "Session",
    "SoulCache",
    "SoulReport",
    "SourceBase",
    "SyncSession",
    "Tool",
    "ToolCall",
    "Usage",
    "agent_from_dir",
    "compose_soul",
    "compose_soul_async",
    "inspect_soul",
    "memory_tool",
    "write_bundle",
]
