"""Compose an AI persona's system prompt — its soul — from the bootstrap files in its home.

>>> from toolnexus.agents import compose_soul
>>> soul, found = compose_soul("examples/aster")  # doctest: +SKIP
"""

from toolnexus._reply import ToolReply
from toolnexus.composer.budget import PROFILES, Budget
from toolnexus.composer.parts import Soul
from toolnexus.composer.rules import (
    BOOTSTRAP_ORDER,
    MAX_BOOTSTRAP_FILE_BYTES,
    TRUNCATION_NOTICE,
    FileReport,
    SoulReport,
)
from toolnexus.errors import BootstrapError
from toolnexus.fleet import AUDIT_ISSUES, AuditSummary, PersonaAudit, audit, dask_client
from toolnexus.memory.portable import MemoryTool, memory_tool
from toolnexus.models.anthropic import AnthropicModel, anthropic_tool, anthropic_tool_result
from toolnexus.models.openai import OpenAIChatModel, openai_tool
from toolnexus.recall import Hit, MemoryGetTool, MemoryIndex, MemorySearchTool, memory_index
from toolnexus.runtime.agent import HEARTBEAT_OK, Agent, AgentTool, agent_from_dir
from toolnexus.runtime.loop import RunResult, Session, SyncSession
from toolnexus.runtime.messages import ModelError, ModelReply, Tool, ToolCall, Usage
from toolnexus.skills import Skill, SkillSet, SkillTool, load_skills
from toolnexus.soul.bundling import write_bundle
from toolnexus.soul.cache import SoulCache
from toolnexus.soul.compose import compose_soul, compose_soul_async, inspect_soul
from toolnexus.soul.reading import BootstrapFile, read_bootstrap_file
from toolnexus.sources import BootstrapSource, DictSource, LayeredSource, ObstoreSource, SourceBase

__all__ = [
    "AUDIT_ISSUES",
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "PROFILES",
    "TRUNCATION_NOTICE",
    "Agent",
    "AgentTool",
    "AnthropicModel",
    "AuditSummary",
    "BootstrapError",
    "BootstrapFile",
    "BootstrapSource",
    "Budget",
    "DictSource",
    "FileReport",
    "Hit",
    "LayeredSource",
    "MemoryGetTool",
    "MemoryIndex",
    "MemorySearchTool",
    "MemoryTool",
    "ModelError",
    "ModelReply",
    "ObstoreSource",
    "OpenAIChatModel",
    "PersonaAudit",
    "RunResult",
    "Session",
    "Skill",
    "SkillSet",
    "SkillTool",
    "Soul",
    "SoulCache",
    "SoulReport",
    "SourceBase",
    "SyncSession",
    "Tool",
    "ToolCall",
    "ToolReply",
    "Usage",
    "agent_from_dir",
    "anthropic_tool",
    "anthropic_tool_result",
    "audit",
    "compose_soul",
    "compose_soul_async",
    "dask_client",
    "inspect_soul",
    "load_skills",
    "memory_index",
    "memory_tool",
    "openai_tool",
    "read_bootstrap_file",
    "write_bundle",
]
