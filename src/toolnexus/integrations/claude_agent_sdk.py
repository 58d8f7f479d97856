"""A persona for the Claude Agent SDK: ``Persona(home).claude_agent_options(**more)`` is a
``ClaudeAgentOptions`` whose ``system_prompt`` is the soul (plus the skill catalog and the daily
notes), composed when it is called — a session's, since one client keeps its options — and whose
in-process MCP server ``persona`` serves that session's memory, search and skill tools (allowed
without a prompt, as ``mcp__persona__memory``…). A failed call is an MCP result with
``isError`` (``is_error`` to Claude). Claude Code itself places the prompt cache breakpoints."""

from __future__ import annotations

from typing import Any

from toolnexus.integrations._persona import PersonaBase, PersonaRun, call_tool, missing_framework
from toolnexus.runtime.messages import ToolSpec

try:
    from claude_agent_sdk import ClaudeAgentOptions, SdkMcpTool, create_sdk_mcp_server
except ImportError as error:  # pragma: no cover - the extra is installed wherever tests run
    raise missing_framework("claude-agent-sdk", "claude-agent-sdk") from error

__all__ = ["SERVER", "Persona", "mcp_tool"]

#: The MCP server's name: Claude calls the tools ``mcp__persona__NAME``.
SERVER = "persona"


def mcp_tool(spec: ToolSpec) -> SdkMcpTool[Any]:
    """A neutral tool as an in-process MCP tool (the SDK checks arguments against its schema)."""

    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        result = await call_tool(spec, arguments)
        return {"content": [{"type": "text", "text": result.text}], "is_error": result.is_error}

    return SdkMcpTool(spec.name, spec.description, spec.input_schema, handler)


class Persona(PersonaBase):
    """The persona at ``home`` for the Claude Agent SDK (keywords: :class:`PersonaBase`'s)."""

    def claude_agent_options(self, **more: Any) -> ClaudeAgentOptions:
        """Options for one session, composed now; ``more`` are any other ``ClaudeAgentOptions``
        (their ``mcp_servers`` and ``allowed_tools`` are kept beside the persona's)."""
        return self.options_for(self.start_run_sync(), **more)

    async def claude_agent_options_async(self, **more: Any) -> ClaudeAgentOptions:
        """:meth:`claude_agent_options` inside an event loop."""
        return self.options_for(await self.start_run(), **more)

    def options_for(self, run: PersonaRun, **more: Any) -> ClaudeAgentOptions:
        server = create_sdk_mcp_server(SERVER, tools=[mcp_tool(tool) for tool in run.tools])
        allowed = [f"mcp__{SERVER}__{tool.name}" for tool in run.tools]
        return ClaudeAgentOptions(
            **more
            | {
                "system_prompt": str(run.system),
                "mcp_servers": {**more.get("mcp_servers", {}), SERVER: server},
                "allowed_tools": [*more.get("allowed_tools", []), *allowed],
            }
        )
