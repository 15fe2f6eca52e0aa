"""Arbitrary call bodies for the "no body is answered with a 5xx" property tests, in process
(tests/http) and over the real service (tests/e2e): the keys the workspace methods read, plus
one none of them does, each holding any JSON value."""

from __future__ import annotations

from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=8,
)
BODY_KEYS = [
    "id",
    "content",
    "query",
    "tags",
    "n",
    "src",
    "dst",
    "type",
    "seedIds",
    "hops",
    "topK",
    "status",
    "limit",
    "weight",
    "addition",
    "x",
]
CALL_BODIES = st.dictionaries(st.sampled_from(BODY_KEYS), JSON_VALUES, max_size=4)
