"""``toolnexus help [COMMAND]`` and ``completion SHELL``, added last as they read the whole parser,
which answers completions itself (run with ``_TOOLNEXUS_COMPLETE=SHELL``): they match ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from toolnexus.cli._support import Subparsers, add_command, emit

#: The environment variable that turns a ``toolnexus`` run into a completion request.
COMPLETE_VARIABLE = "_TOOLNEXUS_COMPLETE"

#: The script ``toolnexus completion SHELL`` prints, by shell.
SCRIPTS = {
    "bash": """\
# bash completion for toolnexus: add to ~/.bashrc
#   eval "$(toolnexus completion bash)"
_toolnexus() {
    local IFS=$'\\n'
    COMPREPLY=($(_TOOLNEXUS_COMPLETE=bash "${COMP_WORDS[0]}" "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _toolnexus toolnexus
""",
    "zsh": """\
#compdef toolnexus
# zsh completion for toolnexus: add to ~/.zshrc (after compinit)
#   eval "$(toolnexus completion zsh)"
_toolnexus() {
    local -a candidates
    candidates=("${(@f)$(_TOOLNEXUS_COMPLETE=zsh "${words[1]}" "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -n "${candidates[1]}" ]]; then
        _describe toolnexus candidates
    else
        _files
    fi
}
if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then
    _toolnexus "$@"
else
    compdef _toolnexus toolnexus
fi
""",
    "fish": """\
# fish completion for toolnexus: save as ~/.config/fish/completions/toolnexus.fish
#   toolnexus completion fish > ~/.config/fish/completions/toolnexus.fish
function __toolnexus_complete
    set -l words (commandline -opc)
    set -l current (commandline -ct)
    set -l found (env _TOOLNEXUS_COMPLETE=fish $words[1] $words[2..-1] $current 2>/dev/null)
    if test (count $found) -gt 0
        printf '%s\\n' $found
    else
        __fish_complete_path $current
    end
end
complete -c toolnexus -f -a '(__toolnexus_complete)'
""",
}


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions if not action.option_strings]


def _walk(
    parser: argparse.ArgumentParser, words: Sequence[str]
) -> tuple[argparse.ArgumentParser, argparse.Action | None, argparse.Action | None]:
    """Follow the complete ``words``: the parser reached, the option waiting for its value and the
    positional the next word fills."""
    positionals, index, waiting = _positionals(parser), 0, None
    for word in words:
        if waiting is not None:
            waiting = None
        elif word.startswith("-") and word != "-":
            action = parser._option_string_actions.get(word.partition("=")[0])
            if action is not None and action.nargs != 0 and "=" not in word:
                waiting = action
        elif index < len(positionals):
            action = positionals[index]
            if isinstance(action, argparse._SubParsersAction) and word in action.choices:
                parser = action.choices[word]
                positionals, index = _positionals(parser), 0
            elif action.nargs not in ("+", "*", argparse.REMAINDER):
                index += 1  # several values: the following words may still be this argument's
    return parser, waiting, positionals[index] if index < len(positionals) else None


def candidates(root: argparse.ArgumentParser, words: Sequence[str]) -> list[tuple[str, str]]:
    """``(word, description)`` pairs completing the last of ``words`` (the program name left out)."""
    *done, current = list(words) or [""]
    parser, waiting, positional = _walk(root, done)
    if waiting is not None:
        options: list[tuple[str, str]] = [(str(choice), "") for choice in waiting.choices or ()]
    elif current.startswith("-"):
        options = [  # a flag's help up to its first clause
            (flag, (action.help or "").split(";")[0].split(". ")[0])
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            for flag in action.option_strings
        ]
    elif isinstance(positional, argparse._SubParsersAction):
        helps = {choice.dest: choice.help or "" for choice in positional._choices_actions}
        options = [(name, helps.get(name, "")) for name in positional.choices]
    elif positional is not None and positional.choices:
        options = [(str(choice), "") for choice in positional.choices]
    else:
        options = []  # a location, a prompt, text: the shell completes file names
    return [(word, text) for word, text in options if word.startswith(current)]


def complete(root: argparse.ArgumentParser, shell: str, words: Sequence[str]) -> str:
    """What the shell function reads: one candidate a line (fish: tab, then a description;
    zsh: ``word:description`` for ``_describe``)."""
    lines = ""
    for word, text in candidates(root, words):
        if shell == "zsh":
            escaped = word.replace(":", "\\:")
            lines += f"{escaped}:{text}\n" if text else f"{escaped}\n"
        else:
            lines += f"{word}\t{text}\n" if shell == "fish" and text else f"{word}\n"
    return lines


_EXAMPLES = """examples:
  eval "$(toolnexus completion bash)"      # in ~/.bashrc
  eval "$(toolnexus completion zsh)"       # in ~/.zshrc, after compinit
  toolnexus completion fish > ~/.config/fish/completions/toolnexus.fish
"""
_DESCRIPTION = (
    "Print the shell completion script for bash, zsh or fish. It asks toolnexus itself what "
    "completes each word, so it always matches the installed version."
)


def register(subparsers: Subparsers, root: argparse.ArgumentParser) -> None:
    """Add ``help`` and ``completion``, which read ``root`` (the ``toolnexus`` parser)."""

    def show_help(args: argparse.Namespace) -> int:
        emit((root if args.topic is None else subparsers.choices[args.topic]).format_help())
        return 0

    def print_script(args: argparse.Namespace) -> int:
        emit(SCRIPTS[args.shell])
        return 0

    summary = "show the help of toolnexus or of one command (the same as COMMAND --help)"
    helper = add_command(subparsers, "help", summary, "toolnexus help bundle", show_help, located=False)
    # The live mapping of commands: one registered after this still counts.
    helper.add_argument("topic", metavar="COMMAND", nargs="?", choices=subparsers.choices)
    summary = "print the shell completion script for bash, zsh or fish"
    completion = add_command(
        subparsers, "completion", summary, _EXAMPLES, print_script, located=False, description=_DESCRIPTION
    )
    completion.add_argument("shell", metavar="SHELL", choices=tuple(SCRIPTS), help="bash, zsh or fish")
