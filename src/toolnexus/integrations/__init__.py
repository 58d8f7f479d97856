"""A persona in the agent framework you already use: one module per framework, each an extra, each
importing its framework only when it is imported itself (this package imports none).

- :mod:`toolnexus.integrations.pydantic_ai`: ``Persona(home)``, a pydantic-ai capability
  (``pip install 'toolnexus[pydantic-ai]'``);
- :mod:`toolnexus.integrations.openai_agents`: ``Persona(home)``'s ``instructions`` and ``tools``
  for the OpenAI Agents SDK (``toolnexus[openai-agents]``);
- :mod:`toolnexus.integrations.langchain`: ``PersonaMiddleware(home)`` for ``create_agent``
  (``toolnexus[langchain]``);
- :mod:`toolnexus.integrations.claude_agent_sdk`: ``Persona(home).claude_agent_options()``
  (``toolnexus[claude-agent-sdk]``).

``PersonaBase`` (what they share) and ``ReadOnlyHomeWarning`` are here too.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from toolnexus.integrations._persona import PersonaBase, PersonaRun, ReadOnlyHomeWarning

__all__ = ["PersonaBase", "PersonaRun", "ReadOnlyHomeWarning"]


def __getattr__(name: str) -> object:
    """The shared pieces, imported on first use (importing this package stays free)."""
    if name in __all__:
        from toolnexus.integrations import _persona  # noqa: PLC0415

        return getattr(_persona, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
