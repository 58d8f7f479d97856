"""The library's messages in the command line's words: flags and nouns, never Python names."""

from __future__ import annotations

import re

__all__ = ["for_people"]

#: ``NAME=VALUE`` a message tells the caller to pass, and the flag that does it.
_ARGUMENTS = {
    "force=True": "--force",
    "follow_external_symlinks=True": "--follow-external-symlinks",
    "single_writer=True": "--single-writer",
    "memory=False": "--no-memory",
}

#: ``pass single_writer=True (CLI: --single-writer)``: the library's own hint for the CLI goes too.
_PASS = re.compile(r"\b(?P<argument>\w+=\w+)(?: \(CLI: --[\w-]+\))?")

#: Python names the library uses as nouns, and what they are called on the command line.
_NOUNS = (
    ("storage_options", "-o options"),
    ("memory_tool", "the memory tool"),
    ("write_bundle", "toolnexus bundle"),
)


def _flag(match: re.Match[str]) -> str:
    return _ARGUMENTS.get(match["argument"], match[0])


def for_people(message: str) -> str:
    """``message`` with each Python argument and name it mentions as the CLI's flag or noun."""
    message = _PASS.sub(_flag, message)
    for python, cli in _NOUNS:
        message = message.replace(python, cli)
    return message
