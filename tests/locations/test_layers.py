"""Layered personas: ``compose_soul([base, …, top])`` is the soul of the flattened home.

Layers mix backends freely (local, zip bundle, memory://, S3, a DictSource); each bootstrap name
comes from the topmost layer holding it as a regular file; all layers are read at once; a missing
layer is an error naming it; memory goes to the top layer; write_bundle flattens.
"""

from __future__ import annotations

import asyncio
import doctest
import io
import itertools
import json
import uuid
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import MotoServer, S3Proxy, put_objects, s3_storage_options
from tests.support.cli import run
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    DictSource,
    LayeredSource,
    compose_soul,
    compose_soul_async,
    inspect_soul,
    memory_tool,
    write_bundle,
)
from toolnexus.sources import base as base_module
from toolnexus.sources import mapping as mapping_module

Persona = Mapping[str, bytes]

BASE = {"AGENTS.md": b"Team rules.\n", "TOOLS.md": b"Team tools.\n", "SOUL.md": b"Generic soul.\n"}
TOP = {"SOUL.md": b"You are Aster.\n", "IDENTITY.md": b"Aster, a fox.\n"}


def flatten(layers: list[Persona]) -> dict[str, bytes]:
    merged: dict[str, bytes] = {}
    for layer in layers:
        merged.update(layer)
    return merged


def write_dir(root: Path, files: Persona) -> Path:
    root.mkdir(parents=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def zip_file(path: Path, files: Persona, folder: str = "aster/") -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(f"{folder}{name}", data)
    path.write_bytes(buffer.getvalue())
    return path


def test_the_protocol_docstring_example_and_dict_source_doctests_pass() -> None:
    for module in (base_module, mapping_module):
        result = doctest.testmod(module, raise_on_error=False)
        assert result.failed == 0
        assert result.attempted >= 2


def test_topmost_regular_file_wins_and_order_is_bootstrap_order(tmp_path: Path) -> None:
    base = write_dir(tmp_path / "base", BASE)
    top = write_dir(tmp_path / "top", TOP)
    (top / "TOOLS.md").mkdir()  # not a regular file: the base's TOOLS.md still shows
    soul, found = compose_soul([base, top])
    assert found == ["AGENTS.md", "SOUL.md", "IDENTITY.md", "TOOLS.md"]
    assert soul == compose_soul(DictSource(flatten([BASE, TOP])))[0]
    assert compose_soul((base, top)) == (soul, found)


def test_inspect_names_the_layer_of_each_file(tmp_path: Path) -> None:
    base = write_dir(tmp_path / "base", BASE)
    top = write_dir(tmp_path / "top", TOP)
    report = inspect_soul([base, top])
    layers = {file.name: file.layer for file in report.files}
    assert layers["AGENTS.md"] == str(base)
    assert layers["SOUL.md"] == str(top)
    assert layers["USER.md"] is None
    assert report.location == f"{base} + {top}"
    assert report.to_dict()["files"][1]["layer"] == str(top)


def test_a_missing_layer_is_an_error_naming_it(tmp_path: Path) -> None:
    top = write_dir(tmp_path / "top", TOP)
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'nobase'}: no such persona home"):
        compose_soul([tmp_path / "nobase", top])
    with pytest.raises(FileNotFoundError, match="nobase"):
        asyncio.run(compose_soul_async([tmp_path / "nobase", top]))


def test_empty_and_nested_layer_lists_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one layer"):
        compose_soul([])
    with pytest.raises(TypeError, match="not nested lists"):
        compose_soul([[tmp_path]])


def test_memory_goes_to_the_top_layer_and_the_base_is_untouched(tmp_path: Path) -> None:
    base = write_dir(tmp_path / "base", {**BASE, "MEMORY.md": b"team memory\n"})
    top = write_dir(tmp_path / "top", TOP)
    reply = memory_tool([base, top]).tool(command="append", content="Mira likes tea.")
    assert reply.startswith("ok")
    assert (top / "MEMORY.md").read_bytes() == b"Mira likes tea.\n"
    assert (base / "MEMORY.md").read_bytes() == b"team memory\n"
    assert compose_soul([base, top])[0].endswith("## MEMORY.md\n\nMira likes tea.")


def test_memory_on_a_layered_persona_with_a_bundle_on_top_is_read_only(tmp_path: Path) -> None:
    base = write_dir(tmp_path / "base", BASE)
    bundle = zip_file(tmp_path / "top.zip", TOP)
    with pytest.raises(OSError, match=r"top\.zip: is a zip bundle \(read-only\)"):
        memory_tool([base, bundle])


def test_write_bundle_flattens_layers(tmp_path: Path) -> None:
    base = write_dir(tmp_path / "base", BASE)
    top = write_dir(tmp_path / "top", TOP)
    out = tmp_path / "flat.zip"
    write_bundle([base, top], out)
    assert compose_soul(out) == compose_soul([base, top])


def test_dict_source_memory_writes_back_into_the_mapping() -> None:
    files: dict[str, bytes | str] = {"SOUL.md": "You are Aster."}
    tool = memory_tool(DictSource(files))
    assert tool.tool(command="append", content="note").startswith("ok")
    assert files["MEMORY.md"] == b"note\n"
    from types import MappingProxyType  # noqa: PLC0415

    with pytest.raises(OSError, match="read-only"):
        memory_tool(DictSource(MappingProxyType(files)))


@pytest.mark.slow
def test_cli_takes_several_locations(tmp_path: Path) -> None:
    base = write_dir(tmp_path / "base", BASE)
    top = write_dir(tmp_path / "top", TOP)

    soul = run("soul", str(base), str(top))
    assert (soul.returncode, soul.stdout) == (0, compose_soul([base, top])[0] + "\n")
    table = run("inspect", str(base), str(top))
    assert table.returncode == 0
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["FILE", "STATUS", "SIZE", "KEPT", "LAYER", "NOTES"]
    assert any(row.startswith("SOUL.md") and str(top) in row for row in rows)
    data = json.loads(run("soul", "--json", str(base), str(top)).stdout)
    assert [f["layer"] for f in data["files"]][:2] == [str(base), str(top)]
    out = tmp_path / "flat.zip"
    assert run("bundle", str(base), str(top), str(out)).returncode == 0
    assert compose_soul(out) == compose_soul([base, top])
    single = run("inspect", str(top))
    assert "LAYER" not in single.stdout


# --- mixed backends -----------------------------------------------------------------------------


@pytest.fixture
def s3_bucket(moto_server: MotoServer, new_bucket: Callable[[], str]) -> str:
    return new_bucket()


class Layers:
    """Puts one layer's files on a given backend and returns the location (and its options)."""

    def __init__(self, tmp: Path, moto: MotoServer, bucket: str, options: dict[str, Any]) -> None:
        self.tmp, self.moto, self.bucket, self.options = tmp, moto, bucket, options

    def local(self, files: Persona) -> Any:
        return write_dir(self.tmp / uuid.uuid4().hex, files)

    def bundle(self, files: Persona) -> Any:
        return zip_file(self.tmp / f"{uuid.uuid4().hex}.zip", files)

    def s3(self, files: Persona) -> Any:
        prefix = uuid.uuid4().hex
        put_objects(self.moto.endpoint_url, self.bucket, {f"{prefix}/{n}": d for n, d in files.items()})
        put_objects(self.moto.endpoint_url, self.bucket, {f"{prefix}/.keep": b""})
        return f"s3://{self.bucket}/{prefix}"

    def dict(self, files: Persona) -> Any:
        return DictSource(dict(files))


MIDDLE = {
    "USER.md": b"Mira.\n",
    "AGENTS.md": b"Bundle rules override.\n",
    "TOOLS.md": b"\xef\xbb\xbfBOM tools\r\n",
}


@pytest.mark.slow
@pytest.mark.s3
@pytest.mark.parametrize("order", list(itertools.permutations(["local", "bundle", "s3"])))
def test_mixed_backends_compose_the_flattened_home(
    tmp_path: Path,
    moto_server: MotoServer,
    s3_bucket: str,
    s3_options: dict[str, Any],
    order: tuple[str, ...],
) -> None:
    layers = Layers(tmp_path, moto_server, s3_bucket, s3_options)
    contents = [BASE, MIDDLE, TOP]
    locations = [getattr(layers, backend)(files) for backend, files in zip(order, contents, strict=True)]
    expected = compose_soul(write_dir(tmp_path / "flat", flatten(contents)))
    assert compose_soul(locations, storage_options=s3_options) == expected
    out = tmp_path / f"{'-'.join(order)}.zip"
    write_bundle(locations, out, storage_options=s3_options)
    assert compose_soul(out) == expected
    assert asyncio.run(compose_soul_async(locations, storage_options=s3_options)) == expected
    assert inspect_soul(locations, storage_options=s3_options).soul == expected[0]


@pytest.mark.slow
@pytest.mark.s3
def test_three_s3_layers_are_read_in_one_round_trip(
    moto_server: MotoServer, s3_bucket: str, tmp_path: Path
) -> None:
    persona = {name: f"{name} text\n".encode() for name in BOOTSTRAP_ORDER}
    for layer in ("base", "team", "agent"):
        put_objects(moto_server.endpoint_url, s3_bucket, {f"{layer}/{n}": d for n, d in persona.items()})
    locations = [f"s3://{s3_bucket}/{layer}" for layer in ("base", "team", "agent")]
    with S3Proxy(moto_server.endpoint_url) as proxy:
        # One cached filesystem for the three layers (same options), its client warmed first, so
        # that only the reads themselves are measured. 21 reads at once need a pool over
        # botocore's default of 10 connections (docs/locations.md says so).
        options = s3_storage_options(proxy.endpoint_url, config_kwargs={"max_pool_connections": 32})
        compose_soul(locations, storage_options=options)
        asyncio.run(compose_soul_async(locations, storage_options=options))
        proxy.reset()
        with proxy.gathering(21):  # held in the proxy until all 21 are in flight (if they ever are)
            _, found = compose_soul(locations, storage_options=options)
        assert found == list(BOOTSTRAP_ORDER)
        assert proxy.count("GET") == proxy.count() == 21
        assert proxy.peak_in_flight == 21  # every read in flight at once: one round trip
        proxy.reset()
        with proxy.gathering(21):
            asyncio.run(compose_soul_async(locations, storage_options=options))
        assert proxy.count() == proxy.peak_in_flight == 21


# --- the property -----------------------------------------------------------------------------

layer_files = st.dictionaries(
    st.sampled_from(BOOTSTRAP_ORDER),
    st.binary(max_size=40) | st.text(max_size=20).map(str.encode),
    max_size=len(BOOTSTRAP_ORDER),
)


@settings(max_examples=25)
@given(st.lists(layer_files, min_size=1, max_size=4))
def test_composing_layers_equals_composing_the_flattened_home(layers: list[Persona]) -> None:
    sources = [DictSource(dict(files), location=f"dict://layer{i}") for i, files in enumerate(layers)]
    flat = DictSource(flatten(layers))
    assert compose_soul(sources) == compose_soul(flat)
    assert inspect_soul(LayeredSource(sources)).soul == compose_soul(flat)[0]
