"""``SoulCache.load_skills``: every call sees the home as it is now, and an unchanged SKILL.md is
not read again where the backend can prove it (an S3 home answers 304s)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import S3Proxy
from toolnexus.agents import DictSource, SoulCache, load_skills


def skill_md(name: str, description: str) -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n".encode()


HOME = {
    "SOUL.md": b"You are Aster.",
    "skills/alpha/SKILL.md": skill_md("alpha", "First."),
    "skills/alpha/scripts/run.py": b"print(1)\n",
    ".agents/skills/beta/SKILL.md": skill_md("beta", "Second."),
}


def described(skills: Any) -> list[tuple[str, str]]:
    return [(skill.name, skill.description) for skill in skills]


def test_a_local_home_is_seen_as_it_is_now(tmp_path: Path) -> None:
    home = tmp_path / "aster"
    for name, data in HOME.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_bytes(data)
    cache = SoulCache()
    assert cache.load_skills(home) == load_skills(home)
    assert described(cache.load_skills(home)) == [("alpha", "First."), ("beta", "Second.")]
    (home / "skills/alpha/SKILL.md").write_bytes(skill_md("alpha", "Changed."))
    (home / "skills/gamma").mkdir()
    (home / "skills/gamma/SKILL.md").write_bytes(skill_md("gamma", "Added."))
    (home / ".agents/skills/beta/SKILL.md").unlink()
    assert described(cache.load_skills(home)) == [("alpha", "Changed."), ("gamma", "Added.")]
    assert cache.load_skills(home) == load_skills(home)


def test_a_mapping_home_follows_its_changes() -> None:
    files = dict(HOME)
    cache = SoulCache()
    source = DictSource(files)
    assert described(cache.load_skills(source)) == [("alpha", "First."), ("beta", "Second.")]
    files["skills/alpha/SKILL.md"] = skill_md("alpha", "Changed.")
    assert described(cache.load_skills(source)) == [("alpha", "Changed."), ("beta", "Second.")]


def test_an_unchanged_s3_home_costs_its_listings_and_304s(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{path}": data for path, data in HOME.items()})
    location, cache = f"s3://{name}/aster", SoulCache()
    first = cache.load_skills(location, **engine_via_proxy)
    assert first == load_skills(location, **engine_via_proxy)
    proxy.reset()
    assert cache.load_skills(location, **engine_via_proxy) == first
    heads = [r for r in proxy.requests if r.path.endswith("/SKILL.md")]
    assert sorted(r.path.rsplit("/", 2)[-2] for r in heads) == ["alpha", "beta"]
    assert all(r.headers.get("if-none-match") for r in heads)
    assert {r.response_status for r in heads} == {304}
    assert sum(r.response_body_bytes for r in heads) == 0
    assert len(proxy.requests) == len(heads) + 2  # and one listing per skills folder
    put({"aster/skills/alpha/SKILL.md": skill_md("alpha", "Changed.")})
    assert described(cache.load_skills(location, **engine_via_proxy)) == [
        ("alpha", "Changed."),
        ("beta", "Second."),
    ]
