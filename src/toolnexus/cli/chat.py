"""The ``toolnexus chat`` loop. A provider error is reported and the chat goes on (the failed turn
is not kept); history is not saved (messages can be private). Exit status: the worst of the chat.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterator

from toolnexus.agents import Agent, ModelError, RunResult
from toolnexus.cli._support import EXIT_ERROR
from toolnexus.cli._wording import for_people

__all__ = ["COMMANDS", "converse"]

#: What ``/help`` prints: the chat's commands (a line that is one of them is never sent).
COMMANDS = {
    "/help": "show these commands",
    "/reset": "start a new session: the soul is composed again, so memory edits show (also /new)",
    "/exit": "leave the chat (also /quit, or end the input with Ctrl-D)",
}
_ALIASES = {"/new": "/reset", "/quit": "/exit"}
#: A line that looks like a command (``/word``) but is none is refused, not sent; ``//`` escapes.
_COMMAND_LIKE = re.compile(r"/[A-Za-z]+")
_HELP = "\n".join(f"  {name:<7} {text}" for name, text in COMMANDS.items()) + (
    "\n  A line starting with // is sent with one / (//usr → /usr)."
)


def _lines(prompt: str) -> Iterator[str]:
    """What the person types, a line at a time, until the input ends."""
    if not sys.stdin.isatty():
        yield from (line.rstrip("\n") for line in sys.stdin)
        return
    editing = sys.stdout.isatty()  # input() only uses readline when both ends are the terminal
    if editing:
        with contextlib.suppress(ImportError):  # a Python built without readline reads plainly
            import readline  # noqa: F401, PLC0415  (importing it gives input() editing and history)
    while True:
        if not editing:
            print(prompt, end="", file=sys.stderr, flush=True)
        try:
            yield input(prompt if editing else "")
        except EOFError:
            print(file=sys.stderr)
            return


def _command(text: str) -> str | None:
    """The chat command ``text`` is, if it is one; ``/unknown`` is reported here."""
    word = text.split(maxsplit=1)[0] if text else ""
    if not _COMMAND_LIKE.fullmatch(word):
        return None
    command = _ALIASES.get(word, word)
    if command not in COMMANDS:
        print(f"toolnexus: unknown command {word}; /help lists them", file=sys.stderr)
        return "/unknown"
    return command


def converse(agent: Agent, answer: Callable[[RunResult], int]) -> int:
    """Chat with ``agent`` until ``/exit`` or the end of input; ``answer`` prints each reply."""
    status = 0
    lines = _lines(f"{agent.name}> ")
    try:
        while True:  # one iteration per session
            with agent.session() as chat:
                for line in lines:
                    text = line.strip()
                    command = _command(text)
                    if command == "/exit":
                        return status
                    if command == "/reset":
                        print("toolnexus: new session (soul recomposed)", file=sys.stderr)
                        break
                    if command == "/help":
                        print(_HELP, file=sys.stderr)
                    if command is not None or not text:
                        continue
                    try:
                        message = text[1:] if text.startswith("//") else text
                        status = max(status, answer(chat.send(message)))
                    except ModelError as error:
                        print(f"toolnexus: error: {for_people(str(error))}", file=sys.stderr)
                        status = EXIT_ERROR
                else:
                    return status
    except KeyboardInterrupt:  # Ctrl-C ends the chat like a shell would, without a traceback
        print(file=sys.stderr)
        return 130
