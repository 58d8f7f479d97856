"""Every Python example in README.md runs as written and prints what it claims.

Each ```python block (the indented ones in lists too) runs on its own, as a reader would paste it
into a fresh interpreter, with the current folder set to a scratch folder holding ``examples`` (a
symlink to the repository's, which no example writes, checked after each run): the files the
examples create (``aster.zip``, ``aster-folder.zip``, ``tempfile`` homes) land there, not in the clone.

Claims, checked in every block:

* ``print(EXPR)  # TEXT`` must print the line TEXT; when TEXT ends with ``:`` it introduces the
  claim, which is the comment line right below (``# error: …``). Every top-level ``print`` claims.
* a bare ``EXPR  # LITERAL`` must equal the Python literal LITERAL.

S3 blocks are not edited either. They reach the session's moto server the way a user's code reaches
S3: through the AWS configuration files. For each block the test points ``AWS_CONFIG_FILE`` and
``AWS_SHARED_CREDENTIALS_FILE`` at files whose ``default`` and ``prod`` profiles name moto's
endpoint (botocore honours ``endpoint_url`` in a profile), hides every other ``AWS_*`` variable,
and has put into ``my-bucket`` what the README names: ``personas/{aster,basil,cedar}/`` (copies of
``examples/aster``), ``team-base/`` and ``agents/{aster,brio}/`` (its files split into layers),
``bundles/aster.zip`` (``write_bundle``'s flat form) and
``bundles/aster-folder.zip`` (the single-folder form). s3fs's instance cache is cleared after each
block, so no filesystem bound to those settings outlives it.

The Command line section's transcript is replayed too: each ``$ COMMAND`` runs in bash, in a
scratch "clone" (a copy of ``examples/``, since the transcript touches it), with the installed
``toolnexus`` first on PATH, and must print exactly the lines below it (stdout and stderr as one
stream, as a terminal shows them). The transcript's paths (``/tmp/toolnexus`` for the clone,
``/tmp/aster-copy``) are mapped to the scratch folder. Its storage-options examples run against
moto through the same AWS configuration as the Python blocks.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import s3fs

from tests.support import MotoServer, make_bucket, put_objects
from toolnexus.agents import BOOTSTRAP_ORDER
from toolnexus.soul.bundling import bundle_bytes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^(?P<indent> *)```python\n(?P<code>.*?)^(?P=indent)```", flags=re.DOTALL | re.MULTILINE)
HEADING = re.compile(r"^#{2,3} (.+)$", flags=re.MULTILINE)
#: The README with every fenced block blanked (offsets kept), so a "## AGENTS.md" printed in an
#: example is not taken for a heading.
PROSE = re.sub(
    r"^ *```.*?^ *```", lambda m: re.sub(r"[^\n]", " ", m[0]), README, flags=re.DOTALL | re.MULTILINE
)
CLAIM = re.compile(r"^(?P<code>\S.*?)\s+# (?P<claim>.+)$")


#: Sections whose examples need more than storage (a model server) and run in their own test,
#: against loopback servers; here they are only compiled. Heading -> the test file that runs them.
RUN_ELSEWHERE = {"Running a persona": "tests/test_agent_readme.py"}


def _blocks() -> list[tuple[str, str, str]]:
    """``(id, heading, code)`` for every Python block; the id names the heading, for readable reports."""
    blocks = []
    for number, fence in enumerate(FENCE.finditer(README)):
        headings = HEADING.findall(PROSE, 0, fence.start())
        heading = headings[-1] if headings else ""
        title = re.sub(r"\W+", "-", heading or "top").strip("-").lower()
        blocks.append((f"{number}-{title}", heading, textwrap.dedent(fence["code"])))
    return blocks


ALL_BLOCKS = _blocks()
BLOCKS = [(name, code) for name, heading, code in ALL_BLOCKS if heading not in RUN_ELSEWHERE]
ELSEWHERE = [(name, heading, code) for name, heading, code in ALL_BLOCKS if heading in RUN_ELSEWHERE]


def claims(code: str) -> tuple[str, list[str]]:
    """The block with each ``EXPR  # LITERAL`` turned into an assertion, and the lines it must print."""
    lines, printed = [], []
    source = code.splitlines()
    for index, line in enumerate(source):
        match = CLAIM.match(line)
        if line.startswith("print("):
            assert match, f"a print without a claimed output: {line}"
            claim = match["claim"]
            if claim.endswith(":"):
                claim = source[index + 1].removeprefix("# ")
            printed.append(claim)
        elif match:
            try:
                expected = ast.literal_eval(match["claim"])
                ast.parse(match["code"], mode="eval")
            except (ValueError, SyntaxError):
                pass
            else:
                lines.append(f"assert ({match['code']}) == {expected!r}, {match['claim']!r}")
                continue
        lines.append(line)
    return "\n".join(lines), printed


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def aws_config(moto_server: MotoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``my-bucket`` filled as the README expects, and AWS config files pointing at moto."""
    endpoint = moto_server.endpoint_url
    make_bucket(endpoint, "my-bucket")
    persona = {name: (EXAMPLES / "aster" / name).read_bytes() for name in BOOTSTRAP_ORDER}
    objects = {
        f"personas/{who}/{name}": data
        for who in ("aster", "basil", "cedar")
        for name, data in persona.items()
    }
    objects["bundles/aster.zip"] = bundle_bytes(persona)
    # Layered personas: a team base and two agents' own layers on top of it.
    objects |= {f"team-base/{name}": persona[name] for name in ("AGENTS.md", "TOOLS.md")}
    own = ("SOUL.md", "IDENTITY.md", "MEMORY.md")
    objects |= {f"agents/{who}/{name}": persona[name] for who in ("aster", "brio") for name in own}
    scratch = tmp_path_factory.mktemp("readme-aws")
    folder_zip = shutil.make_archive(
        str(scratch / "aster-folder"), "zip", root_dir=EXAMPLES, base_dir="aster"
    )
    objects["bundles/aster-folder.zip"] = Path(folder_zip).read_bytes()
    put_objects(endpoint, "my-bucket", objects)
    # `-o s3.anon=true` in the Command line section reads this bundle anonymously, as from a public bucket.
    s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True).chmod(
        "my-bucket/bundles/aster-folder.zip", acl="public-read"
    )
    profile = f"region = us-east-1\nendpoint_url = {endpoint}\n"
    (scratch / "config").write_text(f"[default]\n{profile}[profile prod]\n{profile}")
    keys = "aws_access_key_id = testing\naws_secret_access_key = testing\n"
    (scratch / "credentials").write_text(f"[default]\n{keys}[prod]\n{keys}")
    return {
        "AWS_CONFIG_FILE": str(scratch / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(scratch / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@pytest.fixture
def reader(tmp_path: Path, aws_config: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A reader's setup: cwd with ``examples/``, AWS configured for moto, temp files kept in tmp_path."""
    (tmp_path / "examples").symlink_to(EXAMPLES, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in aws_config.items():
        monkeypatch.setenv(name, value)
    before = tree_hash(EXAMPLES)
    try:
        yield tmp_path
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    assert tree_hash(EXAMPLES) == before, "an example changed the shipped examples/"


def test_the_readme_has_its_examples() -> None:
    assert len(BLOCKS) >= 7
    assert sum(len(claims(code)[1]) for _, code in BLOCKS) >= 5


@pytest.mark.parametrize(
    ("heading", "code"), [(h, c) for _, h, c in ELSEWHERE], ids=[n for n, _, _ in ELSEWHERE]
)
def test_examples_run_elsewhere_compile_and_have_their_test(heading: str, code: str) -> None:
    compile(code, "README.md", "exec")
    assert (ROOT / RUN_ELSEWHERE[heading]).is_file()


@pytest.mark.parametrize("code", [code for _, code in BLOCKS], ids=[name for name, _ in BLOCKS])
def test_every_example_runs_as_written_and_prints_what_it_claims(code: str, reader: Path) -> None:
    compile(code, "README.md", "exec")  # as written: no top-level await, nothing undefined at parse
    checked, expected_output = claims(code)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(checked, "README.md", "exec"), {"__name__": "readme"})
    assert output.getvalue().splitlines() == expected_output


CONSOLE = re.compile(r"^```console\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
TRANSCRIPT = next(block for block in CONSOLE.findall(README) if "$ toolnexus check examples/aster" in block)
OPTION_EXAMPLES = next(block for block in CONSOLE.findall(README) if "-o profile=prod" in block)


def steps(transcript: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` for each ``$ `` line of a transcript."""
    result: list[tuple[str, str]] = []
    for line in transcript.splitlines(keepends=True):
        if line.startswith("$ "):
            result.append((line[2:].rstrip("\n"), ""))
        else:
            command, output = result[-1]
            result[-1] = (command, output + line)
    return result


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", command],
        check=False,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


@pytest.mark.slow
def test_the_command_line_transcript_prints_what_it_shows(tmp_path: Path) -> None:
    clone = tmp_path / "toolnexus"
    shutil.copytree(EXAMPLES, clone / "examples")
    paths = {"/tmp/toolnexus": str(clone), "/tmp/aster-copy": str(tmp_path / "aster-copy")}
    replayed = steps(TRANSCRIPT)
    assert len(replayed) >= 10
    for command, shown in replayed:
        for shown_path, real_path in paths.items():
            command, shown = command.replace(shown_path, real_path), shown.replace(shown_path, real_path)  # noqa: PLW2901
        assert shell(command, clone).stdout == shown, command


@pytest.mark.slow
def test_the_storage_option_examples_run(tmp_path: Path, reader: Path, moto_server: MotoServer) -> None:
    """Run from a clone's root against moto; the bundle line writes the bundle the fixture also put."""
    fs = s3fs.S3FileSystem(endpoint_url=moto_server.endpoint_url, skip_instance_cache=True)
    fs.rm("my-bucket/bundles/aster.zip")  # the example writes it (without --force)
    lines = [line for line in OPTION_EXAMPLES.splitlines() if line.startswith("toolnexus ")]
    assert len(lines) == 3
    for line in lines:
        result = shell(line, reader)
        assert result.returncode == 0, (line, result.stdout)
    assert fs.cat("my-bucket/bundles/aster.zip") == bundle_bytes(
        {name: (EXAMPLES / "aster" / name).read_bytes() for name in BOOTSTRAP_ORDER}
    )
