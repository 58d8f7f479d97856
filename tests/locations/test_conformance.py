"""One persona, every source, byte-identical ``(soul, found)``.

Each source (``tests.support.backends``) stores the same files its own way; Hypothesis generates
the personas. The expected answer is the plain mapping's, which the spec examples and properties
pin down.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings

from tests.support.backends import PERSONAS, SOURCES, Backends, Persona, expected
from tests.support.budgets import BUDGETS, PROFILE_NAMES
from tests.support.budgets import PERSONAS as CUTTABLE_PERSONAS
from tests.support.files import DictSource
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, Budget, compose_soul, compose_soul_async


@pytest.fixture
def backends_sharing_clients(backends: Backends) -> Backends:
    """The same backends, but the S3 ones reuse one client across a property's examples
    (fsspec's instance cache, as users get by default): creating a client per example was most of
    the cost, and each example writes its own prefix, so nothing cached can go stale. Every other
    test here, and every other S3 test, builds a fresh client per call."""
    options = {**backends.s3_options, "skip_instance_cache": False}
    return Backends(backends.tmp, backends.moto, options, backends.bucket, backends.request)


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(persona=PERSONAS)
@pytest.mark.parametrize("source", SOURCES)
def test_every_source_composes_the_same_soul(
    backends_sharing_clients: Backends, source: str, persona: Persona
) -> None:
    location, kwargs = getattr(backends_sharing_clients, source)(persona)
    assert compose_soul(location, **kwargs) == expected(persona)


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(persona=CUTTABLE_PERSONAS, budget=BUDGETS, profile=PROFILE_NAMES)
@pytest.mark.parametrize("source", SOURCES)
def test_every_source_composes_the_same_budgeted_soul_of_its_profile(
    backends_sharing_clients: Backends, source: str, persona: Persona, budget: Budget, profile: str | None
) -> None:
    location, kwargs = getattr(backends_sharing_clients, source)(persona)
    soul, found = compose_soul(location, budget=budget, profile=profile, **kwargs)
    assert (soul, found) == compose_soul(DictSource(persona), budget=budget, profile=profile)
    if budget.total is not None and budget.unit == "chars":
        assert len(soul) <= budget.total


@pytest.mark.parametrize("source", SOURCES)
def test_oversized_and_multibyte_cut_compose_the_same_everywhere(backends: Backends, source: str) -> None:
    cut = b"a" * (MAX_BOOTSTRAP_FILE_BYTES - 1) + "€".encode() + b"tail"
    persona = {"AGENTS.md": cut, "SOUL.md": b"\xef\xbb\xbfYou are Aster.\r\n", "MEMORY.md": b""}
    location, kwargs = getattr(backends, source)(persona)
    soul, found = compose_soul(location, **kwargs)
    assert (soul, found) == expected(persona)
    assert found == ["AGENTS.md", "SOUL.md", "MEMORY.md"]
    assert "\ufffd" not in soul
    assert soul.count("[truncated: exceeds 2 MB bootstrap cap]") == 1


@pytest.mark.parametrize("source", SOURCES)
def test_async_composes_the_same_soul(backends: Backends, source: str) -> None:
    persona = {"SOUL.md": b"You are Aster.", "USER.md": b"Mira", "HEARTBEAT.md": b"ping\r\n"}
    location, kwargs = getattr(backends, source)(persona)
    assert asyncio.run(compose_soul_async(location, **kwargs)) == expected(persona)


@pytest.mark.parametrize("source", [s for s in SOURCES if s != "custom"])
def test_empty_home_composes_empty(backends: Backends, source: str) -> None:
    location, kwargs = getattr(backends, source)({})
    assert compose_soul(location, **kwargs) == ("", [])


def test_found_is_a_new_list_every_call(backends: Backends) -> None:
    location, kwargs = backends.local({"SOUL.md": b"x"})
    first = compose_soul(location, **kwargs)[1]
    first.append("mutated")
    assert compose_soul(location, **kwargs)[1] == ["SOUL.md"]
