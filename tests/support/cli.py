"""The ``toolnexus`` command, two ways: :func:`run` calls its entry function in this process (as
click's ``CliRunner`` does: no interpreter start, about 0.45 s of CPU saved per call) and
:func:`run_installed` runs the installed console script in a subprocess, for the few end-to-end
tests. Both answer the same ``CompletedProcess``, so a test reads alike either way."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.support.s3 import DEFAULT_REGION, DUMMY_KEY, DUMMY_SECRET

__all__ = ["EXAMPLE", "TOOLNEXUS", "help_flags", "help_text", "run", "run_installed", "s3_args"]

TOOLNEXUS = Path(sys.executable).parent / "toolnexus"
#: The installed command first on PATH (for tests that run it through a shell).
ENV = {**os.environ, "PATH": f"{TOOLNEXUS.parent}{os.pathsep}{os.environ['PATH']}"}
#: Every command of the CLI, as docs/cli.md documents them.
COMMANDS = (
    "soul",
    "inspect",
    "check",
    "bundle",
    "memory",
    "ask",
    "chat",
    "audit",
    "skills",
    "help",
    "completion",
)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aster"


def run_installed(
    *args: str, cwd: Path | None = None, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``toolnexus ARGS`` in a subprocess; its exit status is for the test to check. ``env``
    replaces the environment."""
    return subprocess.run(
        [str(TOOLNEXUS), *args],
        check=False,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=180,  # a hang guard: a loaded machine makes imports take many seconds
        cwd=cwd,
        input=stdin,
        env=env,
    )


def run(
    *args: str, cwd: Path | None = None, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``toolnexus ARGS`` as :func:`run_installed` sees it, from ``toolnexus.cli.main`` in this
    process: stdin, stdout, stderr, the working directory and the environment are the command's
    for the call; ``SystemExit`` (argparse's) gives the exit status, an uncaught exception status
    1 with its traceback on stderr, as the interpreter would."""
    from toolnexus.cli import main  # noqa: PLC0415  (collection does not pay for the command's imports)

    out, err = _stream("strict"), _stream("backslashreplace")
    with _as_a_process(cwd, stdin, env, out, err):
        try:
            status = main(list(args))
        except SystemExit as exit_:
            status = _exit_status(exit_.code)
        except Exception:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
    return subprocess.CompletedProcess([str(TOOLNEXUS), *args], status, _text(out), _text(err))


def _stream(errors: str) -> io.TextIOWrapper:
    """A stream like a pipe's ``sys.stdout``: UTF-8 text over a byte ``buffer``, block-buffered."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors)


def _text(stream: io.TextIOWrapper) -> str:
    """What ``subprocess.run(text=True)`` reads: decoded, with universal newlines."""
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _exit_status(code: Any) -> int:
    """The status ``raise SystemExit(code)`` gives a process (a message goes to stderr, status 1)."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def _show_warning(message: Any, category: Any, filename: str, lineno: int, *_: Any) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno))


@contextlib.contextmanager
def _as_a_process(
    cwd: Path | None,
    stdin: str | None,
    env: Mapping[str, str] | None,
    out: io.TextIOWrapper,
    err: io.TextIOWrapper,
) -> Iterator[None]:
    """The process-wide state a subprocess would have of its own, for the duration of one call."""
    saved_environ = dict(os.environ)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_cwd = os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.environ.setdefault("COLUMNS", "80")  # help wraps as on a pipe, not as on pytest's terminal
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8")
        sys.stdout, sys.stderr = out, err
        with warnings.catch_warnings():
            # A fresh interpreter's filters, shown on the command's stderr (not pytest's record).
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = _show_warning
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)


def s3_args(endpoint_url: str, hop: str = "") -> list[str]:
    """``-o`` options for moto, optionally keyed to one hop (``hop="s3."``)."""
    return [
        *("-o", f"{hop}endpoint_url={endpoint_url}"),
        *("-o", f"{hop}key={DUMMY_KEY}"),
        *("-o", f"{hop}secret={DUMMY_SECRET}"),
        *("-o", f"{hop}client_kwargs.region_name={DEFAULT_REGION}"),
        *("-o", f"{hop}client_kwargs.verify=false"),  # plain http: skip loading the CA bundle
        *("-o", f"{hop}skip_instance_cache=true"),
    ]


def help_text(command: str | None = None) -> str:
    """What ``toolnexus [COMMAND] --help`` prints, from the same parser, without a subprocess."""
    from toolnexus.cli.app import build_parser  # noqa: PLC0415  (the command's modules load on demand)

    parser = build_parser()
    if command is None:
        return parser.format_help()
    [commands] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return str(commands.choices[command].format_help())


def help_flags(command: str) -> set[str]:
    """Every flag ``toolnexus COMMAND --help`` lists (``-h``/``--help`` included)."""
    pairs = re.findall(r"^  (-\w|--[\w-]+)(?:, (--[\w-]+))?", help_text(command), flags=re.MULTILINE)
    return {flag for pair in pairs for flag in pair if flag}
