"""A small fleet with one persona per problem an audit finds, placed on disk or on S3.

``FLEET`` maps paths under the prefix to bytes; ``ISSUES_BY_PERSONA`` is what the audit must say
about each persona (``memory-only/`` holds no bootstrap file and ``notes.txt`` is no bundle: neither
is a persona).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.files import tar_bytes
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.soul.bundling import bundle_bytes

__all__ = ["FLEET", "ISSUES_BY_PERSONA", "place_local", "place_s3", "typical_fleet"]

FLEET: dict[str, bytes] = {
    "README.md": b"# Our personas\n",
    "notes.txt": b"not a persona",
    "aster/AGENTS.md": b"Be brief.",
    "aster/SOUL.md": b"You are Aster.",
    "aster/TOOLS.md": b"shell",
    "big/SOUL.md": b"You are big.",
    "big/MEMORY.md": b"m" * (MAX_BOOTSTRAP_FILE_BYTES + 10),
    "latin/SOUL.md": b"caf\xe9 au lait",
    "notepad/SOUL.md": b"\xff\xfe" + "You are Notepad.".encode("utf-16-le"),
    "nosoul/AGENTS.md": b"No soul here.",
    "broken.zip": b"PK\x03\x04 this is no zip archive",
    "bundle.zip": bundle_bytes({"SOUL.md": b"You are zipped.", "USER.md": b"Mira"}),
    "bundle.tar.gz": tar_bytes({"SOUL.md": b"You are tarred."}, "bundle/", "w:gz"),
    "memory-only/notes.md": b"topic notes, no bootstrap file",
}

ISSUES_BY_PERSONA: dict[str, set[str]] = {
    "aster": set(),
    "big": {"truncated"},
    "broken.zip": {"error"},
    "bundle.tar.gz": set(),
    "bundle.zip": set(),
    "latin": {"invalid"},
    "nosoul": {"missing-soul"},
    "notepad": {"utf16"},
}


def place_local(root: Path, files: dict[str, bytes] = FLEET) -> Path:
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def place_s3(endpoint_url: str, bucket: str, prefix: str, files: dict[str, bytes] = FLEET) -> None:
    from tests.support.s3 import put_objects  # noqa: PLC0415  (moto only when asked for)

    put_objects(endpoint_url, bucket, {f"{prefix}/{relative}": data for relative, data in files.items()})


def typical_fleet(
    count: int, names: tuple[str, ...] = ("AGENTS.md", "SOUL.md", "TOOLS.md")
) -> dict[str, bytes]:
    """``count`` small, healthy personas ``p000``, ``p001``, …"""
    return {f"p{i:03d}/{name}": f"# {name} of persona {i}\n".encode() for i in range(count) for name in names}
