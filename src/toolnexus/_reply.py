"""What a tool answers: its text, and whether it reports an error (below every layer: the memory
tools make replies, the agent runtime reads them)."""

from __future__ import annotations

from typing import Any


class ToolReply(str):
    """A tool's answer: a ``str`` (so every caller treating it as text keeps working) whose
    ``is_error`` says whether it is an error, as Anthropic's ``tool_result`` can. String
    operations return a plain ``str``: the flag belongs to the whole answer."""

    is_error: bool

    def __new__(cls, text: str, *, is_error: bool = False) -> ToolReply:
        reply = super().__new__(cls, text)
        reply.is_error = is_error
        return reply

    @classmethod
    def of(cls, text: str) -> ToolReply:
        """``text`` itself when it is a reply already, else a reply that is not an error."""
        return text if isinstance(text, ToolReply) else cls(text)

    def __getnewargs_ex__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (str(self),), {"is_error": self.is_error}

    def __repr__(self) -> str:
        return f"ToolReply({str(self)!r}, is_error={self.is_error})"


def reply_is_error(text: object) -> bool:
    """Whether a tool's answer reports an error: a :class:`ToolReply` says so itself; any other
    answer is one when its text starts with ``error:``."""
    flag = getattr(text, "is_error", None)
    return flag if isinstance(flag, bool) else str(text).startswith("error:")
