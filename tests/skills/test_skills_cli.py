"""``toolnexus skills`` and the skills ``inspect`` lists (docs/cli.md, docs/skills.md)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run

SKILL = "---\nname: {name}\ndescription: Use {name}.\n{extra}---\nBody of {name}.\n"


def home_with_skills(tmp_path: Path) -> Path:
    home = tmp_path / "aster"
    for name, extra in [("good", ""), ("odd", "colour: blue\n")]:
        (home / "skills" / name).mkdir(parents=True)
        (home / "skills" / name / "SKILL.md").write_text(SKILL.format(name=name, extra=extra))
    (home / "SOUL.md").write_text("You are Aster.")
    return home


def test_the_command_lists_warns_prints_and_is_strict_on_request(tmp_path: Path) -> None:
    home = home_with_skills(tmp_path)
    listed = run("skills", str(home))
    assert listed.returncode == 0
    assert listed.stdout == (
        f"good  ok       {home}/skills/good/SKILL.md\nodd   warning  {home}/skills/odd/SKILL.md\n"
    )
    assert listed.stderr == f"toolnexus: warning: {home}/skills/odd/SKILL.md: unknown field colour\n"
    assert run("skills", str(home), "--strict").returncode == 1
    data = json.loads(run("skills", str(home), "--json").stdout)
    assert [skill["status"] for skill in data["skills"]] == ["ok", "warning"]
    assert data["warnings"] == [f"{home}/skills/odd/SKILL.md: unknown field colour"]
    assert run("skills", str(home), "good").stdout.startswith('<skill_content name="good">\nBody of good.')
    assert run("skills", str(home), "good", "SKILL.md").stdout == SKILL.format(name="good", extra="")
    missing = run("skills", str(home), "nope")
    assert (missing.returncode, missing.stdout) == (1, "error: no skill named 'nope' (skills: good, odd)\n")
    assert "<available_skills>" in run("skills", str(home), "--prompt").stdout


def test_inspect_lists_the_skills_under_its_table(tmp_path: Path) -> None:
    home = home_with_skills(tmp_path)
    result = run("inspect", str(home))
    assert result.returncode == 0
    assert result.stdout.endswith(
        f"\nskills (2):\ngood  ok       {home}/skills/good/SKILL.md\n"
        f"odd   warning  {home}/skills/odd/SKILL.md\n"
    )
    assert "unknown field colour" in result.stderr


def test_check_reports_skill_warnings_and_fails_on_them_when_strict(tmp_path: Path) -> None:
    home = home_with_skills(tmp_path)
    result = run("check", str(home))
    assert (result.returncode, result.stdout) == (0, "SOUL.md\n")
    assert result.stderr == f"toolnexus: warning: {home}/skills/odd/SKILL.md: unknown field colour\n"
    assert run("check", str(home), "--strict").returncode == 1
    assert run("check", str(home), "--strict", "-q").stderr == ""
    (home / "skills" / "odd" / "SKILL.md").write_text(SKILL.format(name="odd", extra=""))
    assert run("check", str(home), "--strict").returncode == 0


def test_inspect_json_carries_the_skills_and_a_home_without_any_says_nothing(tmp_path: Path) -> None:
    home = home_with_skills(tmp_path)
    data = json.loads(run("inspect", str(home), "--json").stdout)
    assert [skill["name"] for skill in data["skills"]["skills"]] == ["good", "odd"]
    assert data["skills"]["warnings"] == [f"{home}/skills/odd/SKILL.md: unknown field colour"]
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "SOUL.md").write_text("You are Plain.")
    assert "skills" not in json.loads(run("inspect", str(plain), "--json").stdout)


def test_audit_reads_skills_only_when_asked(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    home_with_skills(fleet)
    (fleet / "plain").mkdir()
    (fleet / "plain" / "SOUL.md").write_text("You are Plain.")
    plain = run("audit", str(fleet))
    lines = [json.loads(line) for line in plain.stdout.splitlines()]
    assert all("skill_warnings" not in line and "skills" not in line["issues"] for line in lines)
    assert "skill" not in plain.stderr
    checked = run("audit", str(fleet), "--skills", "--fail-on", "skills")
    assert checked.returncode == 1
    by_name = {Path(line["location"]).name: line for line in map(json.loads, checked.stdout.splitlines())}
    assert by_name["aster"]["issues"] == ["skills"]
    assert by_name["aster"]["skill_warnings"] == [f"{fleet}/aster/skills/odd/SKILL.md: unknown field colour"]
    assert by_name["plain"]["issues"] == []
    assert "skill_warnings" not in by_name["plain"]
    assert "1 missing SOUL.md" not in checked.stderr
    assert ", 1 with skill warnings, 0 errors;" in checked.stderr
