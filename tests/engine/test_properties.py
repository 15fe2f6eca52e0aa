"""Property-based tests (hypothesis): dedup normalization, relates_to canonicalization, and
capture/getEntry round trips of arbitrary Unicode content and tags."""

from __future__ import annotations

import re
import sys
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from minisphere.engine import constants as C
from minisphere.engine.clock import ManualClock
from minisphere.engine.normalize import content_hash, normalize_content, normalize_tag
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument
from tests.engine.helpers import snapshot

SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
SPACING = [" ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2003", " \t "]


@pytest.fixture(scope="module")
def shared_ws():
    """One workspace per module; each example cleans up after itself with forget()."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "props.db", clock=ManualClock(), synchronous="NORMAL")
        yield ws
        ws.close()


def forget_all(ws) -> None:
    for (entry_id,) in ws.conn.execute("SELECT id FROM entries").fetchall():
        ws.forget(entry_id)
    assert ws.get_count() == {"count": 0}
    assert ws.conn.execute("SELECT COUNT(*) FROM entries_fts_docsize").fetchone()[0] == 0


# ---- dedup normalization ---------------------------------------------------------------------

WORD = st.text(
    alphabet=st.characters(categories=("L", "M", "N", "P", "S")), min_size=1, max_size=10
)


def case_stable(ch: str) -> bool:
    """Characters whose upper and lower case fold back to the same thing (not e.g. Turkish ı)."""  # noqa: RUF002
    return ch.upper().casefold() == ch.casefold() == ch.lower().casefold()


def fullwidth(text: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text)


TRANSFORMS = {
    "same": lambda w: w,
    "upper": lambda w: "".join(ch.upper() if case_stable(ch) else ch for ch in w),
    "lower": lambda w: "".join(ch.lower() if case_stable(ch) else ch for ch in w),
    "swap": lambda w: "".join(ch.swapcase() if case_stable(ch) else ch for ch in w),
    "nfd": lambda w: unicodedata.normalize("NFD", w),
    "nfkd": lambda w: unicodedata.normalize("NFKD", w),
    "nfc": lambda w: unicodedata.normalize("NFC", w),
    "fullwidth": fullwidth,
}


@st.composite
def text_and_variant(draw):
    words = draw(st.lists(WORD, min_size=1, max_size=8))
    base = draw(st.sampled_from(SPACING[:3])).join(words)
    pieces = []
    for word in words:
        pieces.append(TRANSFORMS[draw(st.sampled_from(sorted(TRANSFORMS)))](word))
    separators = [draw(st.sampled_from(SPACING)) for _ in range(len(words) - 1)]
    variant = pieces[0] + "".join(sep + piece for sep, piece in zip(separators, pieces[1:]))
    lead = draw(st.sampled_from(["", " ", "\n\t", "\u3000"]))
    trail = draw(st.sampled_from(["", " ", "\r\n", "\u00a0"]))
    return base, lead + variant + trail


@SETTINGS
@given(pair=text_and_variant())
def test_case_space_and_unicode_variants_are_blocked(shared_ws, pair):
    base, variant = pair
    assume(base.strip())
    try:
        first = shared_ws.capture(base)
        assert first["outcome"] == "stored"
        again = shared_ws.capture(variant)
        assert again == {"outcome": "blocked", "matchId": first["id"]}, (base, variant)
        assert shared_ws.get_count() == {"count": 1}
    finally:
        forget_all(shared_ws)


@SETTINGS
@given(a=st.text(min_size=1, max_size=60), b=st.text(min_size=1, max_size=60))
def test_texts_with_different_normal_forms_are_both_stored(shared_ws, a, b):
    assume("\x00" not in a + b and a.strip() and b.strip())
    assume(normalize_content(a) != normalize_content(b))
    try:
        first, second = shared_ws.capture(a), shared_ws.capture(b)
        assert first["outcome"] == second["outcome"] == "stored"
        assert first["id"] != second["id"]
    finally:
        forget_all(shared_ws)


@SETTINGS
@given(text=st.text(min_size=1, max_size=40), suffix=st.sampled_from([".", "!", "1", "x", "-"]))
def test_a_different_character_is_a_different_fact(shared_ws, text, suffix):
    assume("\x00" not in text and text.strip())
    try:
        shared_ws.capture(text)
        assert shared_ws.capture(text.rstrip() + suffix)["outcome"] == "stored"
    finally:
        forget_all(shared_ws)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_normalization_is_idempotent(text):
    once = normalize_content(text)
    assert normalize_content(once) == once
    assert content_hash(once) == content_hash(text)


# ---- relates_to canonicalization --------------------------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["link", "unlink"]),
        st.integers(0, 3),
        st.integers(0, 3),
        st.sampled_from([0.1, 0.5, 1.0]),
    ),
    min_size=1,
    max_size=25,
)


@pytest.fixture(scope="module")
def graph_ws():
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "graph.db", clock=ManualClock(), synchronous="NORMAL")
        nodes = [ws.capture(f"graph node {i}")["id"] for i in range(4)]
        yield ws, nodes
        ws.close()


@SETTINGS
@given(ops=OPS)
def test_relates_to_is_symmetric_and_canonical(graph_ws, ops):
    ws, nodes = graph_ws
    ws.conn.execute("DELETE FROM edges")
    model: dict[frozenset, float] = {}
    for op, i, j, weight in ops:
        if i == j:
            continue
        pair = frozenset((nodes[i], nodes[j]))
        if op == "link":
            result = ws.link(nodes[i], nodes[j], "relates_to", weight=weight)
            assert result["created"] is (pair not in model)
            model[pair] = weight
        else:
            assert ws.unlink(nodes[i], nodes[j], "relates_to") == {"removed": pair in model}
            model.pop(pair, None)
        rows = ws.conn.execute(
            "SELECT src, dst, weight FROM edges WHERE type = 'relates_to'"
        ).fetchall()
        assert all(src < dst for src, dst, _ in rows)
        assert {(frozenset((s, d)), w) for s, d, w in rows} == set(model.items())
    for node in nodes:
        expected = sum(1 for pair in model if node in pair)
        assert ws.get_entry(node)["edgeCount"] == expected
        assert len(ws.connections(node)["items"]) == expected


@SETTINGS
@given(i=st.integers(0, 3), j=st.integers(0, 3), unlink_reversed=st.booleans())
def test_link_either_order_is_one_edge(graph_ws, i, j, unlink_reversed):
    assume(i != j)
    ws, nodes = graph_ws
    ws.conn.execute("DELETE FROM edges")
    a, b = nodes[i], nodes[j]
    assert ws.link(a, b, "relates_to")["created"] is True
    assert ws.link(b, a, "relates_to")["created"] is False
    assert ws.conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 1
    src, dst = (b, a) if unlink_reversed else (a, b)
    assert ws.unlink(src, dst, "relates_to") == {"removed": True}
    assert ws.conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 0


# ---- capture / getEntry round trips ----------------------------------------------------------

# every encodable code point but NUL (lone surrogates are not text: refused, tested below)
CONTENT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=400
)


@SETTINGS
@given(text=CONTENT)
def test_unicode_content_round_trip(shared_ws, text):
    assume(text.strip())
    try:
        result = shared_ws.capture(text)
        assert result["outcome"] == "stored"
        entry = shared_ws.get_entry(result["id"])
        assert entry["content"] == text
        assert shared_ws.list_recent(n=1)["items"][0]["content"] == text
        seq = shared_ws.conn.execute(
            "SELECT seq FROM entries WHERE id = ?", (result["id"],)
        ).fetchone()[0]
        assert (
            shared_ws.conn.execute(
                "SELECT COUNT(*) FROM entries_fts_docsize WHERE id = ?", (seq,)
            ).fetchone()[0]
            == 1
        )
        updated = shared_ws.update(result["id"], text + " (edited)")
        assert updated["revisions"][0]["content"] == text
    finally:
        forget_all(shared_ws)


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(WHITESPACE), max_size=30))
def test_whitespace_only_content_is_refused(shared_ws, text):
    before = snapshot(shared_ws)
    with pytest.raises(InvalidArgument):
        shared_ws.capture(text)
    assert snapshot(shared_ws) == before


@SETTINGS
@given(head=st.text(max_size=30), tail=st.text(max_size=30))
def test_content_with_nul_is_refused(shared_ws, head, tail):
    before = snapshot(shared_ws)
    with pytest.raises(InvalidArgument):
        shared_ws.capture(head + "\x00" + tail)
    assert snapshot(shared_ws) == before


@SETTINGS
@given(
    head=st.text(max_size=30),
    tail=st.text(max_size=30),
    surrogate=st.characters(categories=("Cs",)),
)
def test_content_with_lone_surrogate_is_refused(shared_ws, head, tail, surrogate):
    before = snapshot(shared_ws)
    with pytest.raises(InvalidArgument):
        shared_ws.capture("x" + head + surrogate + tail)
    assert snapshot(shared_ws) == before


# ---- tags round trip -------------------------------------------------------------------------


def expected_tags(raw_tags: list[str]) -> list[str] | None:
    """The documented tag rules, written out independently; None means 'must be refused'."""
    if len(raw_tags) > C.MAX_TAGS_PER_ENTRY:
        return None
    out: list[str] = []
    for raw in raw_tags:
        tag = re.sub(r"\s+", "-", unicodedata.normalize("NFKC", raw).strip().lower())
        if (
            not tag
            or len(tag) > C.MAX_TAG_CHARS
            or tag.startswith("stale:")
            or any(unicodedata.category(ch)[0] == "C" for ch in tag)
        ):
            return None
        if tag not in out:
            out.append(tag)
    return sorted(out)


TAG = st.one_of(
    st.text(max_size=70),
    st.text(
        alphabet=st.characters(categories=("Lu", "Ll", "Lo", "Nd", "Zs", "Pd")),
        min_size=1,
        max_size=20,
    ),
    # full-width letters on purpose: NFKC folds them to ASCII
    st.sampled_from(
        [
            "Project X",
            "project-x",
            "PROJECT\tX",
            "ＡＢＣ",  # noqa: RUF001 - full-width on purpose
            "stale:as-of",
            "rolled-up",
            "İstanbul",
            "straße",
            "ΣΟΦΙΑ",
        ]
    ),
)


@SETTINGS
@given(raw_tags=st.lists(TAG, max_size=C.MAX_TAGS_PER_ENTRY + 3))
def test_tags_round_trip(shared_ws, raw_tags):
    expected = expected_tags(raw_tags)
    before = snapshot(shared_ws)
    if expected is None:
        with pytest.raises(InvalidArgument):
            shared_ws.capture("tag carrier", tags=raw_tags)
        assert snapshot(shared_ws) == before
        return
    try:
        entry_id = shared_ws.capture("tag carrier", tags=raw_tags)["id"]
        stored = shared_ws.get_entry(entry_id)["tags"]
        assert stored == expected
        for tag in stored:
            assert normalize_tag(tag) == tag  # stored tags are fixed points
            assert [e["id"] for e in shared_ws.list_recent(tag=tag)["items"]] == [entry_id]
        for raw in raw_tags:  # the caller's own spelling finds the entry too
            assert [e["id"] for e in shared_ws.list_recent(tag=raw)["items"]] == [entry_id]
        assert {t["tag"]: t["count"] for t in shared_ws.get_tags()["tags"]} == {
            t: 1 for t in expected
        }
    finally:
        forget_all(shared_ws)
    assert shared_ws.get_tags() == {"tags": [], "truncated": False}
