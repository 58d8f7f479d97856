"""Agent Skills (docs/skills.md): discovery on every backend, validation, the catalog, activation."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.files import tar_bytes, zip_bytes
from toolnexus.agents import SkillSet, anthropic_tool, load_skills, openai_tool

SOUL = b"You are Aster."


def skill_md(name: str, description: str = "", extra: str = "", body: str = "Do the thing.\n") -> bytes:
    description = description or f"Use {name} when asked."
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}".encode()


#: A home with two skills (one with a script and a reference), as relative paths → bytes.
HOME = {
    "SOUL.md": SOUL,
    "skills/pdf-processing/SKILL.md": skill_md(
        "pdf-processing", "Extract text & tables from PDFs.", "license: MIT\nallowed-tools: Read Bash\n"
    ),
    "skills/pdf-processing/scripts/extract.py": b"print('text')\n",
    "skills/pdf-processing/references/FORMS.md": b"# Forms\n",
    ".agents/skills/review/SKILL.md": skill_md("review", "Review <code> for bugs."),
    ".agents/skills/pdf-processing/SKILL.md": skill_md("pdf-processing", "Shadowed by skills/."),
}


def write(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def summary(skills: SkillSet) -> list[tuple[str, str, str]]:
    return [(s.name, s.description, s.location.rsplit("/", 3)[-3]) for s in skills]


def catalog_without_locations(skills: SkillSet) -> str:
    return "\n".join(line for line in skills.prompt().splitlines() if not line.startswith("<location>"))


EXPECTED = [
    ("pdf-processing", "Extract text & tables from PDFs.", "skills"),
    ("review", "Review <code> for bugs.", "skills"),
]


def test_a_home_s_skills_are_found_named_and_described(tmp_path: Path) -> None:
    home = write(tmp_path / "aster", HOME)
    skills = load_skills(home)
    assert summary(skills) == EXPECTED
    assert skills.warnings == ()
    pdf = skills.get("pdf-processing")
    assert pdf.location == f"{home}/skills/pdf-processing/SKILL.md"
    assert pdf.origin == str(home)
    assert (pdf.license, pdf.allowed_tools) == ("MIT", ("Read", "Bash"))
    assert skills.get("review").location == f"{home}/.agents/skills/review/SKILL.md"


def test_every_backend_gives_the_same_catalog_apart_from_locations(
    tmp_path: Path, bucket: tuple[str, Any], s3_options: dict[str, Any]
) -> None:
    home = write(tmp_path / "aster", HOME)
    (tmp_path / "aster.zip").write_bytes(zip_bytes(HOME))
    (tmp_path / "aster-folder.zip").write_bytes(zip_bytes(HOME, folder="aster/"))
    (tmp_path / "aster.tar.gz").write_bytes(tar_bytes(HOME, "", "w:gz"))
    name, put = bucket
    put({f"aster/{path}": data for path, data in HOME.items()})
    put({"aster.zip": zip_bytes(HOME)})
    memory = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    for path, data in HOME.items():
        memory.pipe_file(f"/aster/{path}", data)
    expected = catalog_without_locations(load_skills(home))
    locations: list[Any] = [
        (tmp_path / "aster.zip", {}),
        (str(tmp_path / "aster-folder.zip"), {}),
        (tmp_path / "aster.tar.gz", {}),
        (f"s3://{name}/aster", {"storage_options": s3_options}),
        (f"zip://::s3://{name}/aster.zip", {"storage_options": {"s3": s3_options}}),
        ("/aster", {"fs": memory}),
        ([tmp_path / "aster.zip", f"s3://{name}/aster"], {"storage_options": s3_options}),
    ]
    for location, options in locations:
        skills = load_skills(location, **options)
        assert summary(skills) == EXPECTED, location
        assert catalog_without_locations(skills) == expected, location
        assert "extract.py" in skills.activate("pdf-processing"), location


def test_the_topmost_layer_wins_per_skill_and_every_layer_counts(tmp_path: Path) -> None:
    base = write(
        tmp_path / "base", {"skills/a/SKILL.md": skill_md("a", "Base a."), "skills/b/SKILL.md": skill_md("b")}
    )
    top = write(tmp_path / "top", {"SOUL.md": SOUL, "skills/a/SKILL.md": skill_md("a", "Top a.")})
    (tmp_path / "base/skills/a/only-in-base.txt").write_text("x")
    skills = load_skills([base, top])
    assert [(s.name, s.description, s.origin) for s in skills] == [
        ("a", "Top a.", str(top)),
        ("b", "Use b when asked.", str(base)),
    ]
    assert "only-in-base.txt" not in skills.activate("a")  # a skill comes whole from one layer


def test_shared_roots_come_below_the_home_in_order(
    tmp_path: Path, bucket: tuple[str, Any], s3_options: dict[str, Any]
) -> None:
    home = write(tmp_path / "aster", {"SOUL.md": SOUL, "skills/mine/SKILL.md": skill_md("mine", "Home's.")})
    shared = write(
        tmp_path / "team-skills",
        {"mine/SKILL.md": skill_md("mine", "Shared."), "lint/SKILL.md": skill_md("lint")},
    )
    (tmp_path / "more.zip").write_bytes(
        zip_bytes({"lint/SKILL.md": skill_md("lint", "Zipped."), "fmt/SKILL.md": skill_md("fmt")})
    )
    (tmp_path / "more.tar.gz").write_bytes(tar_bytes({"tar-only/SKILL.md": skill_md("tar-only")}, "", "w:gz"))
    name, put = bucket
    put({"org/skills/cloud/SKILL.md": skill_md("cloud"), "org/skills/cloud/notes.md": b"n"})
    skills = load_skills(
        home,
        extra=[shared, str(tmp_path / "more.zip"), tmp_path / "more.tar.gz", f"s3://{name}/org/skills"],
        storage_options=s3_options,
    )
    assert [(s.name, s.description) for s in skills] == [
        ("cloud", "Use cloud when asked."),
        ("fmt", "Use fmt when asked."),
        ("lint", "Use lint when asked."),
        ("mine", "Home's."),
        ("tar-only", "Use tar-only when asked."),
    ]
    assert skills.get("cloud").location == f"s3://{name}/org/skills/cloud/SKILL.md"
    assert "notes.md" in skills.activate("cloud")


def test_lenient_validation_loads_with_warnings_and_skips_what_cannot_be_listed(tmp_path: Path) -> None:
    home = write(
        tmp_path / "aster",
        {
            "SOUL.md": SOUL,
            "skills/Bad--Name/SKILL.md": skill_md("Bad--Name"),
            "skills/other/SKILL.md": skill_md("not-other", extra="colour: blue\n"),
            "skills/nodesc/SKILL.md": b"---\nname: nodesc\n---\nbody",
            "skills/nofront/SKILL.md": b"# just markdown",
            "skills/broken/SKILL.md": b"---\nname: broken\ndescription: [unclosed\n---\n",
            "skills/bomb/SKILL.md": b"---\nname: bomb\na: &a [x, x]\nb: [*a, *a]\ndescription: boom\n---\n",
            "skills/tagged/SKILL.md": b"---\nname: tagged\ndescription: !!python/name:os.system x\n---\n",
            "skills/huge/SKILL.md": b"---\nname: huge\ndescription: big\nfiller: "
            + b"x" * 17_000
            + b"\n---\n",
            "skills/long/SKILL.md": skill_md("long", "d" * 1100, "compatibility: " + "c" * 501 + "\n"),
        },
    )
    skills = load_skills(home)
    assert skills.names == ["Bad--Name", "long", "not-other"]
    text = "\n".join(skills.warnings)
    for file, phrase in [
        ("Bad--Name", "not lowercase"),
        ("Bad--Name", "a hyphen at an end or doubled"),
        ("other", "differs from its folder 'other'"),
        ("other", "unknown field colour"),
        ("nodesc", "skipped: missing or empty description"),
        ("nofront", "skipped: no YAML frontmatter"),
        ("broken", "skipped: unparseable frontmatter"),
        ("bomb", "anchors, aliases and tags are not allowed"),
        ("tagged", "anchors, aliases and tags are not allowed"),
        ("huge", "skipped: frontmatter over 16384 bytes"),
        ("long", "description over 1024 characters"),
        ("long", "compatibility is not a string of at most 500 characters"),
    ]:
        assert any(f"skills/{file}/SKILL.md: " in w and phrase in w for w in skills.warnings), (
            file,
            phrase,
            text,
        )
    assert skills.get("not-other").warnings == (
        f"{home}/skills/other/SKILL.md: name 'not-other': differs from its folder 'other'",
        f"{home}/skills/other/SKILL.md: unknown field colour",
    )


def test_at_most_200_skills_a_root(tmp_path: Path) -> None:
    home = write(tmp_path / "aster", {f"skills/s{i:03d}/SKILL.md": skill_md(f"s{i:03d}") for i in range(205)})
    skills = load_skills(home)
    assert len(skills) == 200
    assert skills.names[-1] == "s199"
    assert skills.warnings == (f"{home}: 205 skills in skills; the first 200 by name are read, 5 ignored",)


def test_http_homes_have_no_skills_of_their_own(tmp_path: Path) -> None:
    from tests.support.http import serving  # noqa: PLC0415

    write(tmp_path / "aster", HOME)
    with serving(tmp_path) as server:
        assert len(load_skills(f"{server.url}/aster")) == 0


def test_the_catalog_is_the_specification_s_escaped(tmp_path: Path) -> None:
    skills = load_skills(write(tmp_path / "aster", HOME))
    assert skills.prompt() == (
        "## Skills\n\nTo use a skill, call the `skill` tool with its name: it answers the skill's "
        "instructions and lists its files, which `skill` reads with `path`.\n\n<available_skills>\n"
        "<skill>\n<name>pdf-processing</name>\n"
        "<description>Extract text &amp; tables from PDFs.</description>\n"
        f"<location>{tmp_path}/aster/skills/pdf-processing/SKILL.md</location>\n</skill>\n"
        "<skill>\n<name>review</name>\n<description>Review &lt;code&gt; for bugs.</description>\n"
        f"<location>{tmp_path}/aster/.agents/skills/review/SKILL.md</location>\n</skill>\n"
        "</available_skills>"
    )
    assert load_skills(tmp_path / "aster" / "skills").prompt() == ""  # no skills, no catalog


def test_the_catalog_is_bounded_descriptions_first(tmp_path: Path) -> None:
    files = {f"skills/s{i:03d}/SKILL.md": skill_md(f"s{i:03d}", "word " * 150) for i in range(160)}
    files["skills/hidden/SKILL.md"] = skill_md("hidden", extra="disable-model-invocation: true\n")
    skills = load_skills(write(tmp_path / "aster", files))
    assert skills.warnings == ()
    prompt = skills.prompt()
    assert len(prompt) <= 18_000
    assert "<name>hidden</name>" not in prompt
    listed = prompt.count("<skill>")
    assert 50 < listed < 150  # descriptions were cut to the shortest first, then skills left out
    assert prompt.count("…</description>") == listed
    assert prompt.endswith(
        f"{160 - listed} more skills are not listed; `skill` takes any name its input allows."
    )
    small = skills.prompt(max_skills=5, max_chars=100_000)
    assert small.count("<skill>") == 5
    assert small.endswith("155 more skills are not listed; `skill` takes any name its input allows.")
    assert "…" not in small  # room enough: whole descriptions
    assert skills.tool().input_schema["properties"]["name"]["enum"] == [f"s{i:03d}" for i in range(160)]
    tiny = skills.prompt(max_chars=2_000)
    assert len(tiny) <= 2_000
    assert "more skills are not listed" in tiny


def test_activation_reads_the_body_and_lists_resources_once_a_session(tmp_path: Path) -> None:
    home = write(tmp_path / "aster", HOME)
    skills = load_skills(home)
    tool = skills.tool()
    first = tool.tool(name="pdf-processing")
    assert first == (
        '<skill_content name="pdf-processing">\nDo the thing.\n\n'
        f"Skill folder: {home}/skills/pdf-processing\n<skill_resources>\n"
        "references/FORMS.md (8 bytes)\nscripts/extract.py (14 bytes)\n</skill_resources>\n</skill_content>"
    )
    assert not first.is_error
    assert "Already loaded" in tool.tool(name="pdf-processing")
    assert "Do the thing." in skills.tool().tool(name="pdf-processing")  # a new session loads it again
    assert tool.tool(name="pdf-processing", path="scripts/extract.py") == "print('text')\n"
    assert skills.read("pdf-processing", "./references/FORMS.md") == "# Forms\n"
    for bad in ["../review/SKILL.md", "/etc/passwd", "scripts/../../x", "missing.txt"]:
        reply = skills.read("pdf-processing", bad)
        assert reply.is_error, bad
        assert reply.startswith("error:"), bad
    assert skills.activate("nope").is_error
    assert openai_tool(tool)["function"]["parameters"]["required"] == ["name"]
    assert anthropic_tool(tool)["name"] == "skill"


def test_activation_is_bounded_and_executes_nothing(tmp_path: Path) -> None:
    home = write(
        tmp_path / "aster",
        {
            "skills/big/SKILL.md": skill_md("big", body="b" * 300_000),
            "skills/big/blob.bin": b"\x00\x01" * 100,
            "skills/big/huge.txt": b"h" * (256 * 1024 + 1),
            "skills/big/run.sh": b"touch pwned\n",
        },
    )
    (home / "skills/big/escape.md").symlink_to("/etc/hostname")
    os.mkdir(tmp_path / "outside")
    (home / "skills/big/linked").symlink_to(tmp_path / "outside")
    skills = load_skills(home)
    reply = skills.activate("big")
    assert reply.count("b") >= 255_000
    assert "[SKILL.md cut at 256000 bytes]" in reply
    assert "escape.md" not in reply
    assert "linked" not in reply
    assert skills.read("big", "escape.md").is_error
    assert (
        skills.read("big", "blob.bin")
        == "error: blob.bin is a binary file (200 bytes); it cannot be shown as text"
    )
    assert skills.read("big", "huge.txt").startswith("error: huge.txt is ")
    assert skills.read("big", "run.sh") == "touch pwned\n"
    assert not (Path.cwd() / "pwned").exists()


def test_activation_through_a_zip_bundle(tmp_path: Path) -> None:
    data = zip_bytes(HOME)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "skills/pdf-processing/scripts/extract.py" in archive.namelist()
    (tmp_path / "aster.zip").write_bytes(data)
    skills = load_skills(tmp_path / "aster.zip")
    assert skills.read("pdf-processing", "scripts/extract.py") == "print('text')\n"


def test_the_validator_agrees_with_skills_ref(tmp_path: Path) -> None:
    """Generated frontmatter: a skill we load without warnings is one skills-ref finds valid, and
    the other way round. The differences are docs/skills.md's list (not generated here)."""
    skills_ref = pytest.importorskip("skills_ref")
    names = [
        "ok",
        "Upper",
        "-lead",
        "trail-",
        "dou--ble",
        "ünï",
        "a" * 65,
        "with space",
        "under_score",
        "x1-y2",
    ]
    descriptions = ["fine", "d" * 1025, "  "]
    extras = [
        "",
        "license: MIT\n",
        "compatibility: " + "c" * 501 + "\n",
        "unknown: x\n",
        "metadata:\n  k: v\n",
    ]
    cases = [(n, d, e) for n in names for d in descriptions for e in extras]
    for index, (name, description, extra) in enumerate(cases):
        folder = tmp_path / f"case{index}" / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: '{description}'\n{extra}---\nbody\n"
        )
        ours = load_skills(tmp_path / f"case{index}")
        clean = len(ours) == 1 and not ours.warnings
        theirs = skills_ref.validate(folder)
        assert clean == (not theirs), (name, description, extra, ours.warnings, theirs)


def test_a_bundle_carries_the_skills_and_reads_as_its_home(tmp_path: Path) -> None:
    from toolnexus.agents import compose_soul, write_bundle  # noqa: PLC0415

    home = write(tmp_path / "aster", HOME)
    for out in ("aster.zip", "aster.tar.gz"):
        write_bundle(home, tmp_path / out)
        first = (tmp_path / out).read_bytes()
        write_bundle(home, tmp_path / out, force=True)
        assert (tmp_path / out).read_bytes() == first  # byte-reproducible
        bundled = load_skills(tmp_path / out)
        assert catalog_without_locations(bundled) == catalog_without_locations(load_skills(home))
        assert bundled.read("pdf-processing", "scripts/extract.py") == "print('text')\n"
        assert compose_soul(tmp_path / out) == compose_soul(home)
    only_skills = write(tmp_path / "bare", {"skills/a/SKILL.md": skill_md("a")})
    write_bundle(only_skills, tmp_path / "bare.zip")
    assert load_skills(tmp_path / "bare.zip").names == ["a"]


def test_an_agent_is_told_its_skills_and_loads_one_once_a_session(tmp_path: Path) -> None:
    from toolnexus.agents import ModelReply, ToolCall, agent_from_dir  # noqa: PLC0415

    home = write(tmp_path / "aster", HOME)
    seen: list[tuple[str, list[str], list[str]]] = []

    async def model(system: Any, messages: Any, tools: Any) -> ModelReply:
        seen.append((system, [tool.name for tool in tools], [m.text for m in messages]))
        if len(messages) < 5:
            return ModelReply("", (ToolCall(f"c{len(messages)}", "skill", {"name": "pdf-processing"}),))
        return ModelReply("done")

    agent = agent_from_dir(home, model=model, memory=False)
    assert agent.run_sync("Extract the PDF").text == "done"
    system, tools, texts = seen[-1]
    assert system == f"## SOUL.md\n\nYou are Aster.\n\n{load_skills(home).prompt()}"
    assert system.parts[-1] == (f"\n\n{load_skills(home).prompt()}", False)
    assert system.stable == "## SOUL.md\n\nYou are Aster."  # the soul's cached prefix is untouched
    assert tools == ["skill"]
    assert "Do the thing." in texts[2]
    assert "Already loaded" in texts[4]
    seen.clear()
    agent_from_dir(home, model=model, memory=False, skills=["review"]).run_sync("x")
    assert "<name>review</name>" in seen[0][0]
    assert "pdf-processing" not in seen[0][0]
    seen.clear()
    agent_from_dir(home, model=model, memory=False, skills=False).run_sync("x")
    assert seen[0][:2] == ("## SOUL.md\n\nYou are Aster.", [])


def test_a_heartbeat_sees_no_skills(tmp_path: Path) -> None:
    from toolnexus.agents import agent_from_dir  # noqa: PLC0415

    home = write(tmp_path / "aster", {**HOME, "HEARTBEAT.md": b"Check the inbox."})
    seen: list[tuple[str, list[str]]] = []

    async def model(system: Any, messages: Any, tools: Any) -> str:
        seen.append((system, [tool.name for tool in tools]))
        return "HEARTBEAT_OK"

    agent = agent_from_dir(home, model=model, memory=False)
    for light in (False, True):
        assert agent.heartbeat_sync(light=light) is None
    assert all("<available_skills>" not in system and tools == [] for system, tools in seen)


def publish(root: Path, entries: list[tuple[str, str, bytes, str]], schema: str | None = None) -> None:
    """A well-known index under ``root``: ``(name, type, artifact bytes, url)`` each, digests true."""
    import hashlib  # noqa: PLC0415
    import json  # noqa: PLC0415

    folder = root / ".well-known" / "agent-skills"
    skills = []
    for name, kind, data, url in entries:
        write(root if url.startswith("/") else folder, {url.lstrip("/"): data})
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        skills.append({"name": name, "type": kind, "description": "d", "url": url, "digest": digest})
    index = {
        "$schema": schema or "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": skills,
    }
    write(folder, {"index.json": json.dumps(index).encode()})


def test_well_known_skills_are_verified_and_archives_read_in_place(tmp_path: Path) -> None:
    from tests.support.http import serving  # noqa: PLC0415

    site = tmp_path / "site"
    archive_files = {"SKILL.md": skill_md("deploy"), "scripts/deploy.sh": b"echo deploy\n"}
    publish(
        site,
        [
            ("code-review", "skill-md", skill_md("code-review"), "code-review/SKILL.md"),
            ("deploy", "archive", tar_bytes(archive_files, "", "w:gz"), "deploy.tar.gz"),
            (
                "zipped",
                "archive",
                zip_bytes({"SKILL.md": skill_md("zipped"), "a.md": b"A"}),
                "/.well-known/agent-skills/z.zip",
            ),
            ("tampered", "skill-md", skill_md("tampered"), "tampered/SKILL.md"),
            ("odd", "plugin", b"x", "odd.bin"),
        ],
    )
    (site / ".well-known/agent-skills/tampered/SKILL.md").write_bytes(skill_md("tampered", "Evil."))
    home = write(tmp_path / "aster", {"SOUL.md": SOUL, "skills/deploy/SKILL.md": skill_md("deploy", "Mine.")})
    with serving(site) as server:
        skills = load_skills(home, extra=[server.url])
        assert [(s.name, s.description) for s in skills] == [
            ("code-review", "Use code-review when asked."),
            ("deploy", "Mine."),
            ("zipped", "Use zipped when asked."),
        ]
        assert (
            skills.get("code-review").location
            == f"{server.url}/.well-known/agent-skills/code-review/SKILL.md"
        )
        assert skills.get("code-review").origin == server.url
        assert any("tampered/SKILL.md: skipped: its sha256 does not match" in w for w in skills.warnings)
        assert any("odd.bin: skipped: unknown type 'plugin'" in w for w in skills.warnings)
        assert skills.read("zipped", "a.md") == "A"
        shared = load_skills(site, extra=[server.url])
        assert shared.read("deploy", "scripts/deploy.sh") == "echo deploy\n"
        assert "scripts/deploy.sh (12 bytes)" in shared.activate("deploy")
    publish(tmp_path / "other", [], schema="https://example.com/9.9/schema.json")
    with serving(tmp_path / "other") as server:
        skills = load_skills(home, extra=[server.url])
        assert skills.names == ["deploy"]
        assert skills.warnings == (
            f"{server.url}/.well-known/agent-skills/index.json: unknown $schema "
            "'https://example.com/9.9/schema.json' "
            "(known: https://schemas.agentskills.io/discovery/0.2.0/schema.json); the index is not used",
        )


def test_anthropic_s_breakpoints_cover_the_soul_s_stable_part_and_the_catalog(tmp_path: Path) -> None:
    from toolnexus.agents import agent_from_dir  # noqa: PLC0415
    from toolnexus.models.anthropic import system_blocks  # noqa: PLC0415

    home = write(tmp_path / "aster", {**HOME, "MEMORY.md": b"- a note"})

    async def model(system: Any, messages: Any, tools: Any) -> str:
        return "ok"

    session = agent_from_dir(home, model=model, memory=False).session()
    with session as chat:
        blocks = system_blocks(chat.soul, {"type": "ephemeral"})
    catalog = load_skills(home).prompt()
    assert [block["text"] for block in blocks] == [
        "## SOUL.md\n\nYou are Aster.",
        "\n\n## MEMORY.md\n\n- a note",
        f"\n\n{catalog}",
    ]
    assert ["cache_control" in block for block in blocks] == [True, False, True]


def test_a_folder_that_cannot_be_read_is_a_warning_and_a_missing_home_an_error(tmp_path: Path) -> None:
    home = write(tmp_path / "aster", {"SOUL.md": SOUL, "elsewhere/a/SKILL.md": skill_md("a")})
    (home / "skills").symlink_to(home / "elsewhere")
    skills = load_skills(home)
    assert skills.names == []
    assert skills.warnings[0].startswith(f"{home}: skills not read (")
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        load_skills(tmp_path / "nobody")


def test_a_skill_removed_after_listing_answers_an_error(tmp_path: Path) -> None:
    import shutil  # noqa: PLC0415

    home = write(tmp_path / "aster", HOME)
    skills = load_skills(home)
    shutil.rmtree(home)
    reply = skills.activate("pdf-processing")
    assert reply.is_error
    assert reply.startswith("error: the skill 'pdf-processing' cannot be read now (")


@settings(max_examples=60, deadline=None)
@given(
    descriptions=st.lists(st.text("ab <&", min_size=1, max_size=300), max_size=40),
    max_chars=st.integers(400, 6_000),
    max_skills=st.integers(1, 50),
)
def test_the_catalog_fits_its_bounds_and_shortens_before_leaving_out(
    descriptions: list[str], max_chars: int, max_skills: int
) -> None:
    from toolnexus.agents import Skill  # noqa: PLC0415

    skills = SkillSet(
        tuple(Skill(f"s{i:02d}", d, f"/h/s{i:02d}/SKILL.md", "/h") for i, d in enumerate(descriptions))
    )
    prompt = skills.prompt(max_chars=max_chars, max_skills=max_skills)
    if not descriptions:
        assert prompt == ""
        return
    assert len(prompt) <= max_chars
    listed = prompt.count("<skill>")
    assert listed <= max_skills
    assert [f"<name>s{i:02d}</name>" in prompt for i in range(len(descriptions))] == [
        i < listed for i in range(len(descriptions))
    ]  # the first by name are kept
    if listed < min(len(descriptions), max_skills):  # left out: one more would not fit, even cut
        one_more = [
            Skill(f"s{i:02d}", d if len(d) <= 40 else d[:39].rstrip() + "…", f"/h/s{i:02d}/SKILL.md", "/h")
            for i, d in enumerate(descriptions[: listed + 1])
        ]
        rest = len(descriptions) - listed - 1
        more = f"\n{rest} more skill{'s are' if rest > 1 else ' is'} not listed; "
        more += "`skill` takes any name its input allows."
        assert len(SkillSet(tuple(one_more)).prompt(max_chars=10**9)) + (len(more) if rest else 0) > max_chars


def test_inspect_soul_reports_the_skills_beside_the_soul(tmp_path: Path) -> None:
    from toolnexus.agents import compose_soul, inspect_soul  # noqa: PLC0415

    home = write(tmp_path / "aster", HOME)
    report = inspect_soul(home)
    assert summary(report.skills) == EXPECTED
    assert report.skills == load_skills(home)
    assert report.soul == compose_soul(home)[0]  # the soul is untouched
    assert report.to_dict()["skills"] == report.skills.to_dict()
    assert inspect_soul(home, profile="heartbeat").skills is None  # a profile's files only
    assert inspect_soul(home, files=["SOUL.md"]).skills is None
