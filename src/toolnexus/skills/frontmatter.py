"""A SKILL.md's frontmatter, parsed and checked (pure: bytes in, fields and warnings out).

Lenient, as the Agent Skills client guide asks: a name that breaks the rules, an over-long field
or an unknown field loads the skill with a warning; only what leaves nothing to list (no
description, no readable frontmatter) skips it. PyYAML's ``safe_load`` still expands aliases, so
the token stream is scanned first and a frontmatter with anchors, aliases or tags is refused, as
is one over :data:`MAX_FRONTMATTER_BYTES`: a YAML bomb costs a bounded scan and nothing more.
The name checks are ``skills-ref``'s (Unicode letters and digits, lowercase, NFKC); see
docs/skills.md for every difference from it.
"""

from __future__ import annotations

import unicodedata
from typing import Any, NamedTuple

__all__ = ["MAX_FRONTMATTER_BYTES", "Parsed", "parse_skill_md", "split_frontmatter"]

#: Largest frontmatter read (the ``---`` lines included); a longer one skips its skill.
MAX_FRONTMATTER_BYTES = 16 * 1024
MAX_NAME, MAX_DESCRIPTION, MAX_COMPATIBILITY = 64, 1024, 500
KNOWN_FIELDS = frozenset(
    {
        "name",
        "description",
        "license",
        "compatibility",
        "metadata",
        "allowed-tools",
        "disable-model-invocation",
    }
)


class Parsed(NamedTuple):
    """What a SKILL.md says: ``fields`` (``None`` when the skill is skipped) and warnings."""

    fields: dict[str, Any] | None
    warnings: list[str]


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """``(frontmatter, body)`` of a SKILL.md's text, or ``None`` when it has no closed one."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        return None
    first = text.find("\n")
    if first < 0 or text[:first].strip() != "---":
        return None
    position = first + 1
    while position <= len(text):
        end = text.find("\n", position)
        line = text[position : len(text) if end < 0 else end]
        if line.rstrip() == "---":
            return text[first + 1 : position], "" if end < 0 else text[end + 1 :]
        if end < 0:
            return None
        position = end + 1
    return None


def _load_yaml(frontmatter: str) -> Any:
    """``yaml.safe_load`` after refusing anchors, aliases and tags (raises ``ValueError``)."""
    import yaml  # noqa: PLC0415  (only homes with skills pay for it)

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for token in yaml.scan(frontmatter, Loader=loader):
        if isinstance(token, yaml.AnchorToken | yaml.AliasToken | yaml.TagToken):
            raise ValueError("anchors, aliases and tags are not allowed")
    return yaml.load(frontmatter, Loader=loader)  # a safe loader


def parse_skill_md(data: bytes, folder: str) -> Parsed:
    """Parse the head of a SKILL.md (at least :data:`MAX_FRONTMATTER_BYTES` of it) whose folder
    is named ``folder``. Warnings are short phrases; the caller names the file."""
    text = data[: MAX_FRONTMATTER_BYTES + 1].decode("utf-8", errors="replace")
    split = split_frontmatter(text)
    if split is None:
        if len(data) > MAX_FRONTMATTER_BYTES and text.startswith(("---", "\ufeff---")):
            return Parsed(None, [f"skipped: frontmatter over {MAX_FRONTMATTER_BYTES} bytes"])
        return Parsed(None, ["skipped: no YAML frontmatter between --- lines"])
    frontmatter, _ = split
    if len(frontmatter.encode()) + 8 > MAX_FRONTMATTER_BYTES:
        return Parsed(None, [f"skipped: frontmatter over {MAX_FRONTMATTER_BYTES} bytes"])
    try:
        fields = _load_yaml(frontmatter)
    except Exception as error:  # yaml.YAMLError and the refusal above
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return Parsed(None, [f"skipped: unparseable frontmatter ({reason})"])
    if not isinstance(fields, dict):
        return Parsed(None, ["skipped: the frontmatter is not a mapping"])
    return _checked({str(key): value for key, value in fields.items()}, folder)


def _checked(fields: dict[str, Any], folder: str) -> Parsed:
    warnings: list[str] = []
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        return Parsed(None, ["skipped: missing or empty description"])
    fields["description"] = description.strip()
    if len(fields["description"]) > MAX_DESCRIPTION:
        warnings.append(f"description over {MAX_DESCRIPTION} characters")
    name = fields.get("name")
    fields["name"] = unicodedata.normalize("NFKC", name.strip()) if isinstance(name, str) else ""
    warnings += _name_warnings(fields["name"], folder)
    if not fields["name"]:
        fields["name"] = folder
    compatibility = fields.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or len(compatibility) > MAX_COMPATIBILITY
    ):
        warnings.append(f"compatibility is not a string of at most {MAX_COMPATIBILITY} characters")
        fields.pop("compatibility")
    license_ = fields.get("license")
    if license_ is not None and not isinstance(license_, str):
        fields["license"] = str(license_)
    metadata = fields.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        warnings.append("metadata is not a mapping")
        fields.pop("metadata")
    elif metadata is not None:
        fields["metadata"] = {str(key): str(value) for key, value in metadata.items()}
    tools = fields.get("allowed-tools")
    if isinstance(tools, str):
        fields["allowed-tools"] = tuple(tools.split())
    elif isinstance(tools, list):
        fields["allowed-tools"] = tuple(str(tool) for tool in tools)
    elif tools is not None:
        warnings.append("allowed-tools is not a space-separated string")
        fields.pop("allowed-tools")
    unknown = sorted(set(fields) - KNOWN_FIELDS)
    if unknown:
        warnings.append(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    return Parsed(fields, warnings)


def _name_warnings(name: str, folder: str) -> list[str]:
    """The specification's name rules, as ``skills-ref`` applies them."""
    if not name:
        return ["missing or empty name (the folder's name is used)"]
    problems = []
    if len(name) > MAX_NAME:
        problems.append(f"over {MAX_NAME} characters")
    if name != name.lower():
        problems.append("not lowercase")
    if name.startswith("-") or name.endswith("-") or "--" in name:
        problems.append("a hyphen at an end or doubled")
    if not all(character.isalnum() or character == "-" for character in name):
        problems.append("characters other than letters, digits and hyphens")
    if name != unicodedata.normalize("NFKC", folder):
        problems.append(f"differs from its folder {folder!r}")
    return [f"name {name!r}: {problem}" for problem in problems]
