"""``toolnexus ask HOME PROMPT`` and ``toolnexus chat HOME``: a persona against a model; a missing
key is named before anything is sent. Exit status: 0 answered; 1 stopped at ``--max-turns``; 2 an error."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from toolnexus.agents import Agent, AnthropicModel, ModelError, OpenAIChatModel, RunResult, agent_from_dir
from toolnexus.cli._support import (
    EXIT_ERROR,
    Handler,
    Subparsers,
    add_command,
    budget_kwargs,
    emit,
    emit_json,
    for_people,
    location,
    location_kwargs,
    plural,
    say,
    seconds,
    whole,
)
from toolnexus.runtime.loop import DEFAULT_MAX_TURNS

#: Environment variables that hold a key each provider's SDK accepts (the first is the usual one).
KEY_VARIABLES = {
    "openai": ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
}

_HOME_HELP = "persona home: a folder, a zip or tar bundle (with --no-memory) or an fsspec URL"

_ASK_EXAMPLES = """examples (the persona may edit its memory: work on a copy, or pass --no-memory):
  cp -r examples/aster /tmp/aster
  toolnexus ask /tmp/aster "What should I read next?" --model llama3.2 \\
      --base-url http://localhost:11434/v1
  ANTHROPIC_API_KEY=... toolnexus ask examples/aster "Hello" --no-memory --provider anthropic \\
      --model claude-sonnet-4-6
"""

_CHAT_EXAMPLES = """One soul per session: memory edits show after /reset, which starts a new session.
Type /help for the commands, /exit (or end the input) to leave. On a terminal, lines can be
edited and recalled (readline); a provider error is reported and the chat goes on.

example (the persona may edit its memory: work on a copy):
  cp -r examples/aster /tmp/aster
  toolnexus chat /tmp/aster --model llama3.2 --base-url http://localhost:11434/v1
"""


def _require_key(provider: str, base_url: str | None) -> None:
    """Name the variable to set, before the SDK fails with its own wording. An OpenAI-compatible
    ``--base-url`` needs no key (one is made up); the anthropic SDK always wants one."""
    variables = KEY_VARIABLES[provider]
    if any(os.environ.get(variable) for variable in variables) or (provider == "openai" and base_url):
        return
    if base_url is None:
        local = " (or pass --base-url for a local server that needs none)" if provider == "openai" else ""
    else:
        local = f" (any value, if the server at {base_url} ignores it)"
    raise ValueError(f"no API key for {provider}: set {variables[0]}{local}")


def _agent(args: argparse.Namespace) -> Agent:
    model_name = args.model or os.environ.get("TOOLNEXUS_MODEL")
    if not model_name:
        raise ValueError("no model: pass --model NAME (or set TOOLNEXUS_MODEL)")
    _require_key(args.provider, args.base_url)
    model_class: Any = AnthropicModel if args.provider == "anthropic" else OpenAIChatModel
    return agent_from_dir(
        args.home,
        model=model_class(
            model_name, base_url=args.base_url, max_retries=args.max_retries, timeout=args.timeout
        ),
        memory=not args.no_memory,
        max_turns=args.max_turns,
        single_writer=args.single_writer,
        **budget_kwargs(args),
        **location_kwargs(args),
    )


def answer(result: RunResult, args: argparse.Namespace) -> int:
    """Print one answer (``-v``: and a usage line on stderr); exit 1 when it stopped at ``--max-turns``."""
    if getattr(args, "json", False):
        emit_json(result.to_dict())
    else:
        emit(result.text + "\n" if result.text else "")
    if args.verbose:
        usage = result.usage
        say(
            f"{plural(result.turns, 'turn')}: {usage.input_tokens:,} input tokens "
            f"({usage.cache_read_tokens:,} read from the cache, {usage.cache_write_tokens:,} written to it), "
            f"{usage.output_tokens:,} output tokens"
        )
    if result.completed:
        return 0
    say(f"warning: no final answer after {result.turns} turns (--max-turns)")
    return 1


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
        say(f"unknown command {word}; /help lists them")
        return "/unknown"
    return command


def _chat(args: argparse.Namespace) -> int:
    """Chat until ``/exit`` or the end of input; a failed turn is not kept, and history is not saved
    (messages can be private)."""
    agent, status = _agent(args), 0
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
                        say("new session (soul recomposed)")
                        break
                    if command == "/help":
                        print(_HELP, file=sys.stderr)
                    if command is not None or not text:
                        continue
                    try:
                        message = text[1:] if text.startswith("//") else text
                        status = max(status, answer(chat.send(message), args))
                    except ModelError as error:
                        say(f"error: {for_people(str(error))}")
                        status = EXIT_ERROR
                else:
                    return status
    except KeyboardInterrupt:  # Ctrl-C ends the chat like a shell would, without a traceback
        print(file=sys.stderr)
        return 130


def _ask(args: argparse.Namespace) -> int:
    return answer(_agent(args).run_sync(args.prompt), args)


def _base_url(text: str) -> str:
    """An http(s) URL: ``localhost:11434`` would reach the SDK as a bare "Connection error."."""
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc:
        return text
    example = "http://HOST:PORT/v1"
    raise argparse.ArgumentTypeError(f"expected a URL with its scheme, like {example}, got {text!r}")


def _add(
    subparsers: Subparsers, name: str, summary: str, epilog: str, handler: Handler
) -> argparse.ArgumentParser:
    """``ask`` or ``chat``: the home, then the model options they share."""
    parser = add_command(subparsers, name, summary, epilog, handler, symlinks=False, budget=True)
    parser.add_argument("home", type=location, metavar="HOME", help=_HOME_HELP)
    model = parser.add_argument_group("model options")
    model.add_argument("--model", help="model name (default: $TOOLNEXUS_MODEL)")
    model.add_argument(
        "--provider",
        choices=("openai", "anthropic"),
        default="openai",
        help="wire format: openai (Chat Completions, any compatible server; the default) or anthropic; "
        "the key comes from OPENAI_API_KEY or ANTHROPIC_API_KEY",
    )
    model.add_argument(
        "--base-url",
        type=_base_url,
        metavar="URL",
        help="the provider's URL, e.g. http://localhost:11434/v1 for Ollama",
    )
    model.add_argument(
        "--max-retries",
        type=whole(0),
        metavar="N",
        default=2,
        help="retries of a failed model call, with the SDK's backoff (default: %(default)s; 0 fails fast)",
    )
    model.add_argument(
        "--timeout",
        type=seconds("a positive number of seconds"),
        metavar="SECONDS",
        help="give up on a model call after this long (default: the SDK's, 10 minutes)",
    )
    model.add_argument(
        "--max-turns",
        type=whole(1),
        metavar="N",
        default=DEFAULT_MAX_TURNS,
        help="model calls per answer, at least 1 (default: %(default)s)",
    )
    model.add_argument(
        "--no-memory", action="store_true", help="run without the memory tool (read-only homes)"
    )
    model.add_argument(
        "--single-writer",
        action="store_true",
        help="only this process writes the home: plain writes where conditional ones are unavailable",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="after each answer, one line on stderr: turns, tokens in (cache reads, writes) and out",
    )
    return parser


def register(subparsers: Subparsers) -> None:
    ask = _add(subparsers, "ask", "ask a persona one question and print its answer", _ASK_EXAMPLES, _ask)
    ask.add_argument("prompt", metavar="PROMPT", help="what to ask")
    ask.add_argument(
        "--json",
        action="store_true",
        help='print {"text", "status", "turns", "usage"} as one object instead of the answer',
    )
    _add(subparsers, "chat", "talk with a persona, one line per message", _CHAT_EXAMPLES, _chat)
