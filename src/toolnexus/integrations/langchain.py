"""A persona as LangChain agent middleware:
``create_agent(model, tools=[], middleware=[PersonaMiddleware("s3://bucket/aster")])``.

``before_agent`` composes the soul once per invocation and keeps it for every model call of it;
``wrap_model_call`` sets it as the system message (on ``ChatAnthropic``, as text blocks with
``cache_control`` after the stable part and after the whole soul) and adds the run's tools, and
``wrap_tool_call`` runs them (tools a middleware adds per call are LangChain's dynamic tools). A
failed call is a ``ToolMessage`` with ``status="error"`` (``is_error`` on Anthropic)."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, NotRequired

from toolnexus.integrations._persona import PersonaBase, PersonaRun, call_tool, missing_framework
from toolnexus.models.anthropic import system_blocks
from toolnexus.runtime.messages import ToolSpec, run_blocking

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import ModelCallResult, PrivateStateAttr
    from langchain_core.messages import SystemMessage, ToolMessage
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime
    from langgraph.types import Command
except ImportError as error:  # pragma: no cover - the extra is installed wherever tests run
    raise missing_framework("langchain", "langchain") from error

__all__ = ["PersonaMiddleware", "PersonaState"]

#: Runs kept for invocations that never reached ``after_agent`` (an interrupt, an error).
MAX_OPEN_RUNS = 256


class PersonaState(AgentState[Any]):
    """The agent's state, plus which persona run an invocation is (never shown to the model)."""

    toolnexus_run: NotRequired[Annotated[str, PrivateStateAttr]]


def langchain_tool(spec: ToolSpec) -> BaseTool:
    """A neutral tool as a LangChain tool: its own JSON Schema; a failure as a ``ToolException``,
    which ``handle_tool_error`` turns into an error ``ToolMessage``."""

    async def acall(**arguments: Any) -> str:
        result = await call_tool(spec, arguments)
        if result.is_error:
            raise ToolException(result.text)
        return result.text

    def call(**arguments: Any) -> str:
        return run_blocking(lambda: acall(**arguments), f"the {spec.name} tool")

    return StructuredTool(
        name=spec.name,
        description=spec.description,
        args_schema=spec.input_schema,
        func=call,
        coroutine=acall,
        handle_tool_error=True,
    )


class _Run:
    def __init__(self, run: PersonaRun) -> None:
        self.run = run
        self.tools = {tool.name: langchain_tool(tool) for tool in run.tools}


class PersonaMiddleware(AgentMiddleware[PersonaState, Any]):
    """The persona at ``home`` for ``create_agent`` (its system prompt takes the place of
    ``system_prompt=``). ``cache``: the breakpoints' TTL on Anthropic models, or ``False``;
    every other keyword is :class:`PersonaBase`'s."""

    state_schema = PersonaState

    def __init__(self, home: Any, *, cache: Literal["5m", "1h"] | bool = "5m", **options: Any) -> None:
        super().__init__()
        self.persona = PersonaBase(home, **options)
        self.cache = cache
        self.tools = []
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    def _keep(self, run: PersonaRun) -> dict[str, Any]:
        key = uuid.uuid4().hex
        self._runs[key] = _Run(run)
        while len(self._runs) > MAX_OPEN_RUNS:
            self._runs.popitem(last=False)
        return {"toolnexus_run": key}

    def before_agent(self, state: PersonaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._keep(self.persona.start_run_sync())

    async def abefore_agent(self, state: PersonaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._keep(await self.persona.start_run())

    def after_agent(self, state: PersonaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        self._runs.pop(state.get("toolnexus_run", ""), None)
        return None

    async def aafter_agent(self, state: PersonaState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    def _run(self, state: Any) -> _Run | None:
        return self._runs.get(state.get("toolnexus_run", "")) if isinstance(state, dict) else None

    def _with_persona(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        current = self._run(request.state)
        if current is None:
            return request
        soul = current.run.system
        content: str | list[str | dict[str, Any]] = str(soul)
        if self.cache and getattr(request.model, "_llm_type", None) == "anthropic-chat":
            ttl = "5m" if self.cache is True else self.cache
            marker = {"type": "ephemeral"} | ({"ttl": ttl} if ttl != "5m" else {})
            content = list(system_blocks(soul, marker))
        added = [
            tool for name, tool in current.tools.items() if name not in {_name(t) for t in request.tools}
        ]
        return request.override(system_message=SystemMessage(content=content), tools=[*request.tools, *added])

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelCallResult[Any]:
        return handler(self._with_persona(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        return await handler(self._with_persona(request))

    def _tool_request(self, request: ToolCallRequest) -> ToolCallRequest:
        current = self._run(request.state)
        if current is None or request.tool is not None:  # a tool of the agent's own, not the run's
            return request
        tool = current.tools.get(request.tool_call["name"])
        return request if tool is None else request.override(tool=tool)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        return handler(self._tool_request(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return await handler(self._tool_request(request))


def _name(tool: BaseTool | dict[str, Any]) -> str | None:
    return tool.get("name") if isinstance(tool, dict) else tool.name
