"""``toolnexus ask HOME PROMPT`` and ``toolnexus chat HOME``: run a persona against a model.

The API key comes from the provider's usual environment variable (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``); with ``--base-url`` (a local OpenAI-compatible server) none is needed.
Exit status: 0 answered; 1 the run stopped at ``--max-turns`` without a final answer; 2 a
storage, usage or provider error (one ``toolnexus: error: …`` line, from :func:`toolnexus.cli.app.main`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from toolnexus.agents import Agent, AnthropicModel, OpenAIChatModel, RunResult, agent_from_dir
from toolnexus.cli._support import (
    Subparsers,
    budget_kwargs,
    budget_options,
    emit,
    location,
    location_options,
    plural,
)
from toolnexus.runtime.loop import DEFAULT_MAX_TURNS

__all__ = ["EXIT_UNFINISHED", "register"]

#: Exit status when the model still wanted tools after ``--max-turns``.
EXIT_UNFINISHED = 1

#: Lines ``chat`` reads as commands rather than prompts.
NEW_SESSION, QUIT = "/new", ("/exit", "/quit")

_HOME_HELP = "persona home: a folder, a zip bundle (with --no-memory) or an fsspec URL"

_ASK_EXAMPLES = """examples (the persona may edit its memory: work on a copy, or pass --no-memory):
  cp -r examples/aster /tmp/aster
  toolnexus ask /tmp/aster "What should I read next?" --model llama3.2 \\
      --base-url http://localhost:11434/v1
  ANTHROPIC_API_KEY=... toolnexus ask examples/aster "Hello" --no-memory --provider anthropic \\
      --model claude-sonnet-4-6
"""

_CHAT_EXAMPLES = """One soul per session: memory edits show after /new, which starts a new session.
Type /exit (or end the input) to leave.

example (the persona may edit its memory: work on a copy):
  cp -r examples/aster /tmp/aster
  toolnexus chat /tmp/aster --model llama3.2 --base-url http://localhost:11434/v1
"""


def _agent(args: argparse.Namespace) -> Agent:
    model_name = args.model or os.environ.get("TOOLNEXUS_MODEL")
    if not model_name:
        raise ValueError("no model: pass --model NAME (or set TOOLNEXUS_MODEL)")
    model_class: Any = AnthropicModel if args.provider == "anthropic" else OpenAIChatModel
    model = model_class(
        model_name, base_url=args.base_url, max_retries=args.max_retries, timeout=args.timeout
    )
    return agent_from_dir(
        args.home,
        model=model,
        memory=not args.no_memory,
        storage_options=args.storage_options,
        max_turns=args.max_turns,
        single_writer=args.single_writer,
        **budget_kwargs(args),
    )


def _answer(result: RunResult, args: argparse.Namespace) -> int:
    if getattr(args, "json", False):
        emit(json.dumps(result.to_dict(), ensure_ascii=False, indent=2) + "\n")
    else:
        emit(result.text + "\n" if result.text else "")
    if args.verbose:
        usage = result.usage
        print(
            f"toolnexus: {plural(result.turns, 'turn')}: {usage.input_tokens:,} input tokens "
            f"({usage.cache_read_tokens:,} read from the cache, {usage.cache_write_tokens:,} written to it), "
            f"{usage.output_tokens:,} output tokens",
            file=sys.stderr,
        )
    if result.completed:
        return 0
    print(f"toolnexus: warning: no final answer after {result.turns} turns (--max-turns)", file=sys.stderr)
    return EXIT_UNFINISHED


def _ask(args: argparse.Namespace) -> int:
    return _answer(_agent(args).run_sync(args.prompt), args)


def _chat(args: argparse.Namespace) -> int:
    try:
        return _converse(_agent(args), args)
    except KeyboardInterrupt:  # Ctrl-C ends the chat like a shell would, without a traceback
        print(file=sys.stderr)
        return 130


def _converse(agent: Agent, args: argparse.Namespace) -> int:
    interactive = sys.stdin.isatty()
    status = 0
    while True:  # one iteration per session
        with agent.session() as chat:
            while True:
                if interactive:
                    print(f"{agent.name}> ", end="", file=sys.stderr, flush=True)
                line = sys.stdin.readline()
                prompt = line.strip()
                if not line or prompt in QUIT:
                    return status
                if prompt == NEW_SESSION:
                    print("toolnexus: new session (soul recomposed)", file=sys.stderr)
                    break
                if prompt:
                    status = _answer(chat.send(prompt), args)


def _add(subparsers: Subparsers, name: str, summary: str, epilog: str) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        parents=[location_options(symlinks=False), budget_options()],
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("home", type=location, metavar="HOME", help=_HOME_HELP)
    model = parser.add_argument_group("model options")
    model.add_argument("--model", help="model name (default: $TOOLNEXUS_MODEL)")
    model.add_argument(
        "--provider",
        choices=("openai", "anthropic"),
        default="openai",
        help="wire format: openai (Chat Completions, any compatible server; the default) or anthropic",
    )
    model.add_argument("--base-url", help="the provider's URL, e.g. http://localhost:11434/v1 for Ollama")
    model.add_argument(
        "--max-retries",
        type=_count,
        default=2,
        help="retries of a failed model call, with the SDK's backoff (default: %(default)s; 0 fails fast)",
    )
    model.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up on a model call after this long (default: the SDK's, 10 minutes)",
    )
    model.add_argument(
        "--max-turns",
        type=int,
        default=DEFAULT_MAX_TURNS,
        help="model calls per answer (default: %(default)s)",
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


def _count(text: str) -> int:
    """A whole number of at least 0, with the argument's own error if not."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    """A positive number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return seconds


def register(subparsers: Subparsers) -> None:
    """Add ``ask HOME PROMPT`` and ``chat HOME``."""
    ask = _add(subparsers, "ask", "ask a persona one question and print its answer", _ASK_EXAMPLES)
    ask.add_argument("prompt", metavar="PROMPT", help="what to ask")
    ask.add_argument(
        "--json", action="store_true", help="print the answer as JSON: text, status, turns and usage"
    )
    ask.set_defaults(handler=_ask)
    chat = _add(subparsers, "chat", "talk with a persona, one line per message", _CHAT_EXAMPLES)
    chat.set_defaults(handler=_chat)
