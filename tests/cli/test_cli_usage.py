"""Usage errors, -V, ``help COMMAND``, shell completion, ``--json`` everywhere.

The command runs in-process; completion is exercised through the shells
themselves (bash's ``complete``, fish's ``complete -C``, zsh's completion function), and its
answers for every command from the entry point in-process, as the script calls it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import COMMANDS, ENV, EXAMPLE, help_flags, run, run_installed
from toolnexus import __version__
from toolnexus.agents import BOOTSTRAP_ORDER


def test_an_unknown_flag_after_a_subcommand_shows_that_usage_and_a_suggestion() -> None:
    """The bug: ``toolnexus soul examples/aster --jsn`` printed the top-level usage, no hint."""
    result = run("soul", str(EXAMPLE), "--jsn")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("usage: toolnexus soul [-h] [-o KEY=VALUE]")
    assert result.stderr.splitlines()[-1] == (
        "toolnexus soul: error: unrecognized arguments: --jsn; did you mean '--json'?"
    )
    nested = run("memory", str(EXAMPLE), "view", "--singel-writer")
    assert nested.stderr.startswith("usage: toolnexus memory LOCATION [LOCATION ...] view [-h]")
    assert nested.stderr.splitlines()[-1].endswith("did you mean '--single-writer'?")
    far = run("check", str(EXAMPLE), "--zzz")  # nothing close: no suggestion, still check's usage
    assert far.stderr.startswith("usage: toolnexus check ")
    assert far.stderr.splitlines()[-1] == "toolnexus check: error: unrecognized arguments: --zzz"


def test_dash_capital_v_is_the_version() -> None:
    short, long = run_installed("-V"), run("--version")
    assert (short.returncode, short.stdout) == (0, f"toolnexus {__version__}\n")
    assert long.stdout == short.stdout


def test_help_command_is_command_help() -> None:
    assert run("help").stdout == run("--help").stdout
    for command in ("bundle", "memory"):
        helped = run("help", command)
        assert helped.returncode == 0
        assert helped.stdout == run(command, "--help").stdout
    assert "see 'toolnexus help COMMAND' for more" in run("--help").stdout


def test_memory_usage_says_location_like_the_others() -> None:
    """The bug: ``memory``'s usage line said ``location`` where the others say ``LOCATION``."""
    usage = " ".join(run("memory", "--help").stdout.split("\n\n", 1)[0].split())  # however it wraps
    assert "LOCATION [LOCATION ...] {view,append,replace,remove,search}" in usage
    assert " location " not in usage


def shell(name: str, script: str) -> list[str]:
    """The lines ``name -c script`` prints (it must succeed)."""
    result = subprocess.run(
        [name, "-c", script], env=ENV, capture_output=True, text=True, check=True, timeout=300
    )
    return result.stdout.splitlines()


def bash_complete(*lines: str) -> list[str]:
    """Each line is the words typed so far (the last one being completed, maybe empty)."""
    script = ["source <(toolnexus completion bash)", "complete -p toolnexus"]
    for line in lines:
        words = shlex.split(line) + ([""] if line.endswith(" ") else [])
        array = " ".join(shlex.quote(word) for word in words)
        script.append(
            f"COMP_WORDS=({array}); COMP_CWORD={len(words) - 1}; _toolnexus; "
            'printf "%s\\n" "${COMPREPLY[*]}"'
        )
    return shell("bash", "\n".join(script))


def test_bash_completion_is_registered_and_answers_from_the_parser() -> None:
    registered, *answers = bash_complete("toolnexus ", "toolnexus soul --j", "toolnexus soul ")
    assert registered == "complete -o default -F _toolnexus toolnexus"
    assert answers == [
        " ".join(COMMANDS),
        "--json",
        "",  # a location: bash falls back to file names (-o default)
    ]
    # The other answers, from the same entry point the script calls (see ``complete``).
    assert complete("so") == "soul"
    assert complete("bundle", "home", "out.x", "--format", "t") == "tar tar.gz tgz tar.bz2 tbz2 tar.xz txz"
    assert complete("memory", "/tmp/aster", "") == "view append replace remove search"
    assert complete("ask", "home", "hi", "--provider", "a") == "anthropic"
    assert complete("help", "b") == "bundle"
    assert complete("completion", "") == "bash zsh fish"


def complete(*words: str) -> str:
    """What bash's ``_toolnexus`` puts in ``COMPREPLY`` (joined by spaces) for ``toolnexus WORDS``,
    from the command's entry function in-process with the variable the script sets: one line a
    candidate, empty lines dropped by bash's word splitting. The script itself runs in bash in
    ``test_bash_completion_is_registered_and_answers_from_the_parser``."""
    result = run(*words, env={**ENV, "_TOOLNEXUS_COMPLETE": "bash"})
    return " ".join(line for line in result.stdout.split("\n") if line)


def test_completion_offers_every_flag_each_help_lists() -> None:
    """Completion and ``--help`` come from one parser: completion offers exactly what help lists."""
    for command in COMMANDS:
        assert set(complete(command, "-").split()) == help_flags(command), command


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completion() -> None:
    script = (
        "toolnexus completion fish | source; complete -C 'toolnexus so'; complete -C 'toolnexus soul --j'"
    )
    assert shell("fish", script) == ["soul\tprint the composed soul", f"--json\t{_JSON_FISH}"]


_JSON_FISH = "print the full report as JSON (the same as soul --json and inspect --json)"


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion() -> None:
    """zsh's completion system needs a terminal; its two builtins are stubbed to print."""
    script = (
        'compdef() { print "compdef $*"; }; _describe() { print -l -- "${(@P)2}"; }\n'
        "_files() { print FILES; }\n"
        "source <(toolnexus completion zsh)\n"
        "words=(toolnexus me); CURRENT=2; _toolnexus\n"
        'words=(toolnexus soul ""); CURRENT=3; _toolnexus\n'
    )
    assert shell("zsh", script) == [
        "compdef _toolnexus toolnexus",
        "memory:view or edit a persona's MEMORY.md or USER.md",
        "FILES",
    ]


def test_json_on_check_and_memory(tmp_path: Path) -> None:
    """``--json`` was only on soul and inspect (bundle: test_bundle_formats; ask: test_chat_cli)."""
    home = Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))
    checked = run("check", "--json", str(home))
    assert checked.returncode == 0
    assert json.loads(checked.stdout) == {"location": str(home), "found": list(BOOTSTRAP_ORDER)}
    (tmp_path / "empty").mkdir()
    nothing = run("check", "--json", str(tmp_path / "empty"))
    assert nothing.returncode == 1
    assert json.loads(nothing.stdout) == {"location": str(tmp_path / "empty"), "found": []}
    appended = run("memory", str(home), "append", "likes tea", "--json")
    assert appended.returncode == 0
    reply = json.loads(appended.stdout)
    assert (reply["action"], reply["ok"]) == ("append", True)
    assert reply["reply"].startswith("ok: ")
    refused = run("memory", str(home), "--json", "remove", "no such text")
    assert (refused.returncode, refused.stderr) == (1, "")
    assert json.loads(refused.stdout)["ok"] is False
