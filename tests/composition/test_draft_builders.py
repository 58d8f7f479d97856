"""The hot paths' builders of frozen reports (``present_file``, ``soul_report``, ``persona_audit``,
all on :func:`toolnexus._slots.draft_class`): each gives the object its class's constructor
builds, field by field, and just as frozen, hashable and picklable."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus._slots import draft_class
from toolnexus.composer.budget import Budget
from toolnexus.composer.reports import FileReport, SoulReport, present_file, soul_report
from toolnexus.fleet.results import PersonaAudit, persona_audit

COUNTS = st.integers(min_value=0, max_value=10**6)
NAMES = st.one_of(st.none(), st.text(max_size=20))
#: Everything a present file's report says besides its name, as ``present_file`` takes it.
FIELDS = st.fixed_dictionaries({
    "size": st.one_of(st.none(), st.integers(min_value=0, max_value=2**40)),
    "kept_bytes": COUNTS,
    "layer": NAMES,
    "truncated": st.booleans(),
    "encoding": st.sampled_from(["utf-8", "utf-16-le", "utf-16-be"]),
    "bom_stripped": st.booleans(),
    "line_endings_normalised": COUNTS,
    "invalid_bytes_replaced": COUNTS,
})  # fmt: skip


@settings(max_examples=100)
@given(st.text(max_size=20), FIELDS)
def test_present_file_is_the_constructors_report(name: str, fields: dict[str, Any]) -> None:
    fast = present_file(name, **fields)
    built = FileReport(name, "present", **fields)
    assert type(fast) is FileReport
    assert dataclasses.astuple(fast) == dataclasses.astuple(built)  # every field set, to the same value
    assert fast == built
    assert hash(fast) == hash(built)
    assert repr(fast) == repr(built)
    assert fast.to_dict() == built.to_dict()


def test_present_file_is_frozen_picklable_and_replaceable() -> None:
    report = present_file("SOUL.md", 12, 12, "/base", line_endings_normalised=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.size = 3  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(report)) == report
    assert copy.deepcopy(report) == report
    budgeted = dataclasses.replace(report, chars=12, kept=12)
    assert type(budgeted) is FileReport
    assert dataclasses.astuple(budgeted)[:11] == dataclasses.astuple(report)[:11]
    assert (budgeted.chars, budgeted.kept) == (12, 12)


@pytest.mark.parametrize("budget", [None, Budget(total=100)])
def test_soul_report_is_the_constructors_report(budget: Budget | None) -> None:
    files = (present_file("SOUL.md", 3, 3, None), FileReport("AGENTS.md", "absent"))
    parts = (("## SOUL.md\n\nhi!", True),)
    fast = soul_report("/p", "## SOUL.md\n\nhi!", ["SOUL.md"], files, budget=budget, parts=parts)
    built = SoulReport("/p", "## SOUL.md\n\nhi!", ["SOUL.md"], files, budget, parts)
    assert type(fast) is SoulReport
    assert [getattr(fast, f.name) for f in dataclasses.fields(SoulReport)] == [
        getattr(built, f.name) for f in dataclasses.fields(SoulReport)
    ]
    assert fast == built
    assert repr(fast) == repr(built)
    assert pickle.loads(pickle.dumps(fast)) == built
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.soul = ""  # type: ignore[misc]


@pytest.mark.parametrize("tokens", [None, 7])
def test_persona_audit_is_the_constructors_result(tokens: int | None) -> None:
    report = soul_report("/p", "", [], (), budget=None, parts=())
    fast = persona_audit("/fleet/p", report, tokens)
    built = PersonaAudit("/fleet/p", report, soul_tokens=tokens)
    assert type(fast) is PersonaAudit
    assert dataclasses.astuple(fast) == dataclasses.astuple(built)
    assert fast == built
    assert fast.to_dict() == built.to_dict()
    assert pickle.loads(pickle.dumps(fast)) == built  # what a Dask worker sends back
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.error = OSError()  # type: ignore[misc]


def test_a_draft_class_needs_a_slotted_class_of_its_own() -> None:
    class Plain:
        pass

    class Slotted(FileReport):
        __slots__ = ()

    for cls in (Plain, Slotted):
        with pytest.raises(TypeError, match=cls.__name__):
            draft_class(cls)
