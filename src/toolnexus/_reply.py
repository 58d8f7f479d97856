"""What a tool answers: its text, and whether that text reports an error.

A :class:`ToolReply` *is* a ``str`` (the text sent back to the model), so every caller that
treated a tool's answer as text keeps working; ``is_error`` rides along for the places that can
say so — Anthropic's ``tool_result`` blocks carry ``is_error: true``. It lives below every layer
because the memory tools make replies and the agent runtime reads them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ToolReply", "reply_is_error"]

#: How a plain ``str`` answer says it is an error (the tools' convention before ToolReply).
ERROR_PREFIX = "error:"


class ToolReply(str):
    """A tool's answer: ``str(reply)`` is the text, ``reply.is_error`` whether it is an error.

    >>> reply = ToolReply("The path /memories/x.md does not exist", is_error=True)
    >>> reply.is_error, reply.startswith("The path")
    (True, True)

    String operations (``+``, slicing, ``strip``) return a plain ``str``: the flag belongs to the
    whole answer, not to pieces of it.
    """

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
    answer is an error when its text starts with ``error:`` (how tools said it before)."""
    flag = getattr(text, "is_error", None)
    if isinstance(flag, bool):
        return flag
    return str(text).startswith(ERROR_PREFIX)
