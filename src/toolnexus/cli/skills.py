"""``toolnexus skills``: a home's Agent Skills, the catalog the model sees, what activating one answers.

Exit status: 0 done; 1 with ``--strict`` when a skill has a warning; 2 an error.
"""

from __future__ import annotations

import argparse

from toolnexus.agents import SkillSet, load_skills
from toolnexus.cli._support import Subparsers, add_command, emit, emit_json, location, warn

__all__ = ["register", "skill_rows"]


def _load(args: argparse.Namespace) -> SkillSet:
    return load_skills(
        args.location, extra=args.extra, storage_options=args.storage_options, engine=args.engine
    )


def skill_rows(skills: SkillSet) -> str:
    """One line per skill: name, status, location (what ``inspect`` prints under its table)."""
    width = max((len(skill.name) for skill in skills), default=0)
    return "".join(
        f"{skill.name:<{width}}  {'warning' if skill.warnings else 'ok':<7}  {skill.location}\n"
        for skill in skills
    )


def _skills(args: argparse.Namespace) -> int:
    skills = _load(args)
    if args.name:
        reply = skills.read(args.name, args.path) if args.path else skills.activate(args.name)
        emit(reply if reply.endswith("\n") else reply + "\n")
        return 1 if reply.is_error else 0
    if args.prompt:
        emit(skills.prompt() + "\n" if len(skills) else "")
    elif args.json:
        emit_json(skills.to_dict())
    else:
        emit(skill_rows(skills))
    for message in skills.warnings if not args.json else ():
        warn(message)
    return 1 if args.strict and skills.warnings else 0


def register(subparsers: Subparsers) -> None:
    """Add ``skills LOCATION [NAME [PATH]]``."""
    summary = "list a persona's Agent Skills, print their catalog, or what loading one answers"
    example = "toolnexus skills examples/aster --extra ~/.agents/skills"
    parser = add_command(subparsers, "skills", summary, example, _skills, symlinks=False)
    parser.add_argument("location", type=location, metavar="LOCATION", help="persona home")
    parser.add_argument("name", nargs="?", metavar="NAME", help="a skill: print what activating it answers")
    parser.add_argument("path", nargs="?", metavar="PATH", help="a file of that skill: print its text")
    parser.add_argument(
        "--extra", action="append", default=[], metavar="ROOT", help="a shared skills root (repeatable)"
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the skills and warnings as JSON")
    output.add_argument("--prompt", action="store_true", help="print the catalog the model sees")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any skill has a warning")
