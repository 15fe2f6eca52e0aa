"""The word-by-word rule behind supersession hints (vectors/hints.py), over generated sentences:
a subject's value changed is a restatement; the same text, another subject, or another word
changed is not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minisphere.engine.vectors.hints import compare

NAMES = st.sampled_from(["Alice", "Bruno", "Chiara", "Dmitri", "Esther", "Farid"])
PLACES = st.sampled_from(["Lisbon", "Denver", "Osaka", "Tallinn", "Porto", "Quito"])
NUMBERS = st.integers(min_value=0, max_value=10_000)
TEMPLATES = st.sampled_from(
    [
        "{s} lives in {v}.",
        "{s} has settled in {v} now.",
        "Update: {s} relocated to {v} last week.",
        "Heads up, {s} is living in {v} from now on.",
    ]
)
NUMBER_TEMPLATES = st.sampled_from(
    [
        "The {s} budget for the quarter is {v} euros.",
        "Build times for {s} average {v} seconds.",
        "The {s} launch slipped to week {v}.",
    ]
)


@given(TEMPLATES, NAMES, PLACES, PLACES)
def test_a_subject_whose_place_changed_is_a_restatement(template, subject, was, now):
    found = compare(template.format(s=subject, v=was), template.format(s=subject, v=now))
    if was == now:
        assert found is None  # nothing changed
    else:
        assert found is not None
        assert (found.before, found.after) == ((was.lower(),), (now.lower(),))


@given(NUMBER_TEMPLATES, st.sampled_from(["billing", "search", "mobile"]), NUMBERS, NUMBERS)
def test_a_changed_number_is_a_restatement(template, subject, was, now):
    found = compare(template.format(s=subject, v=was), template.format(s=subject, v=now))
    assert (found is None) is (was == now)
    if found is not None:
        assert (found.before, found.after) == ((str(was),), (str(now),))


@given(TEMPLATES, NAMES, NAMES, PLACES)
def test_another_subject_with_the_same_value_is_no_restatement(template, one, other, place):
    assert compare(template.format(s=one, v=place), template.format(s=other, v=place)) is None


@given(
    st.sampled_from(
        [
            ("{s} lives in {v}.", "{s} works in {v}."),
            ("{s} has settled in {v} now.", "{s} has studied in {v} now."),
            ("Heads up, {s} is living in {v} from now on.", "Heads up, {s} is teaching in {v}."),
        ]
    ),
    NAMES,
    PLACES,
    PLACES,
)
def test_another_ordinary_word_changed_beside_the_value_is_no_restatement(pair, subject, was, now):
    earlier, later = pair
    assert compare(earlier.format(s=subject, v=was), later.format(s=subject, v=now)) is None


@pytest.mark.parametrize(
    ("earlier", "later", "before", "after"),
    [
        (
            "The billing service deploys to eu-west-1 on Fridays.",
            "The billing service does not deploy to eu-west-1 on Fridays.",
            (),
            ("not",),
        ),
        ("Alice isn't coming to the offsite.", "Alice is coming to the offsite.", ("isn't",), ()),
        ("The launch is on March 3.", "The launch is on March 10.", ("3",), ("10",)),
    ],
)
def test_a_negation_or_date_changed_is_a_restatement(earlier, later, before, after):
    found = compare(earlier, later)
    assert found is not None and (found.before, found.after) == (before, after)


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("Project Fjord has a new lead: Nadia.", "Project Iris has a new lead: Nadia."),
        ("Home for Alice is Lisbon.", "Home for Bruno is Lisbon."),
        ("Alice is out sick today.", "Bruno is out sick today."),
        ("The billing service deploys to us-east-1.", "Billing moved: eu-west-1 is the region."),
        ("Lunch was great today.", "Lunch was terrible today."),  # no detail changed
    ],
)
def test_another_subject_or_other_words_are_no_restatement(earlier, later):
    assert compare(earlier, later) is None


@given(st.text(max_size=200))
def test_a_text_never_restates_itself(text):
    assert compare(text, text) is None
