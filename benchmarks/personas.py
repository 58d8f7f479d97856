"""Persona homes and bundles the benchmarks compose: typical, huge, sparse and zip-bomb."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

from toolnexus.agents import BOOTSTRAP_ORDER

#: The typical persona: six bootstrap files of about 3 KB (no MEMORY.md yet).
TYPICAL_NAMES = BOOTSTRAP_ORDER[:6]
TYPICAL_SIZE = 3 * 1024

_PARAGRAPH = (
    "- Keep answers short and concrete; say which file or command a claim comes from.\n"
    "- When a request is ambiguous, ask one precise question before acting.\n"
    "- Never invent tool output: run the tool or say that you did not.\n"
)


def text_of(size: int, title: str = "Persona") -> bytes:
    """Markdown-ish ASCII text of exactly ``size`` bytes."""
    head = f"# {title}\n\n".encode()
    body = _PARAGRAPH.encode() * (size // len(_PARAGRAPH) + 1)
    return (head + body)[:size]


def typical_files() -> dict[str, bytes]:
    return {name: text_of(TYPICAL_SIZE, name.removesuffix(".md")) for name in TYPICAL_NAMES}


def write_home(home: Path, files: dict[str, bytes]) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (home / name).write_bytes(data)
    return home


def write_sized(home: Path, size: int, *, sparse_beyond: int | None = None) -> Path:
    """A home whose AGENTS.md has ``size`` bytes; past ``sparse_beyond`` bytes it is a hole."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "AGENTS.md"
    written = size if sparse_beyond is None else min(size, sparse_beyond)
    with path.open("wb") as out:
        chunk = text_of(1024 * 1024)
        left = written
        while left > 0:
            out.write(chunk[:left])
            left -= len(chunk)
        out.truncate(size)
    return home


def bundle_bytes(files: dict[str, bytes], *, folder: str = "aster", asset_size: int = 0) -> bytes:
    """A ``zip -r``-style bundle; the asset is incompressible and stored, between the members."""
    buffer = io.BytesIO()
    names = sorted(files)
    half = len(names) // 2
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names[:half]:
            archive.writestr(f"{folder}/{name}", files[name], compress_type=zipfile.ZIP_DEFLATED)
        if asset_size:
            archive.writestr(f"{folder}/assets/voice.bin", os.urandom(asset_size), zipfile.ZIP_STORED)
        for name in names[half:]:
            archive.writestr(f"{folder}/{name}", files[name], compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def central_directory_size(data: bytes) -> int:
    """Bytes of the central directory and end records: what any zip reader must fetch."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return len(data) - archive.start_dir


def member_bytes(data: bytes, names: tuple[str, ...]) -> int:
    """Stored (compressed) bytes of the members named, with their local headers."""
    total = 0
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if info.filename.rsplit("/", 1)[-1] in names and "/assets/" not in info.filename:
                total += 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size
    return total


def write_zip_bomb(path: Path, inflated: int) -> Path:
    """A bundle whose AGENTS.md inflates to ``inflated`` bytes of spaces (~1000:1 deflate)."""
    block = b" " * (1024 * 1024)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("SOUL.md", b"You are a bundle with a very large AGENTS.md.")
        with archive.open("AGENTS.md", "w", force_zip64=True) as member:
            for _ in range(inflated // len(block)):
                member.write(block)
    return path
