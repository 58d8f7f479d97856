"""``present_file``, the cheap way the composer builds a present file's :class:`FileReport`: the
same object the constructor builds, field by field, and just as frozen, hashable and picklable."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.composer.reports import FileReport, present_file

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
