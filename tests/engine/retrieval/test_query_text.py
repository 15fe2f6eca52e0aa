"""Query text: stop words, rare-term distillation, FTS5 safety, keyword-arm ordering, stemming."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.query_text import STOP_WORDS, distill, match_any, tokenize
from minisphere.errors import InvalidArgument
from tests.engine.retrieval.helpers import ids

# ---- stop words and common terms -------------------------------------------------------------


def test_stop_words_are_dropped_and_reported(ws, now_clock, add):
    hit = add("Status of the zebra enclosure renovation")
    result = ws.recall("what is the status of the zebra?")
    used = result["queryUsed"]
    assert used["terms"] == ["status", "zebra"]
    assert used["droppedTerms"] == ["what", "is", "the", "of"]
    assert set(used["droppedTerms"]) <= STOP_WORDS
    assert ids(result) == [hit]


def test_a_query_of_only_stop_words_still_searches(ws, now_clock, add):
    with_them = add("To be or not to be")
    add("Zebra crossing repainted")
    result = ws.recall("to be or not")
    assert result["queryUsed"]["terms"] == ["to", "be", "or", "not"]
    assert result["queryUsed"]["droppedTerms"] == []
    assert ids(result) == [with_them]


def _common_terms_workspace(add, count):
    """`count` entries: 'project' and 'update' in all, 'kiwi' in 21, 'mango' in 22, 'zebra' in 1."""
    made = []
    for i in range(count):
        words = ["project", "update", f"item{i}"]
        if i < 21:
            words.append("kiwi")
        if 21 <= i < 43:
            words.append("mango")
        if i == 45:
            words.append("zebra")
        made.append(add(" ".join(words)))
    return made


def test_common_terms_are_kept_below_the_minimum_workspace_size(ws, now_clock, add):
    assert T.COMMON_TERM_MIN_ENTRIES == 50 and T.COMMON_TERM_DOC_RATIO == 0.35
    _common_terms_workspace(add, T.COMMON_TERM_MIN_ENTRIES - 1)
    used = ws.recall("project zebra")["queryUsed"]
    assert used["terms"] == ["project", "zebra"] and used["droppedTerms"] == []


def test_terms_in_too_many_entries_are_dropped(ws, now_clock, add):
    made = _common_terms_workspace(add, T.COMMON_TERM_MIN_ENTRIES)
    result = ws.recall("project zebra")
    assert result["queryUsed"]["terms"] == ["zebra"]
    assert result["queryUsed"]["droppedTerms"] == ["project"]
    assert ids(result) == [made[45]]
    used = ws.recall("kiwi zebra")["queryUsed"]  # 21/50 = 0.42 > 0.35: dropped as well
    assert (used["terms"], used["droppedTerms"]) == (["zebra"], ["kiwi"])


def test_common_term_boundary_is_inclusive(ws, now_clock, add):
    _common_terms_workspace(add, 60)
    # 21/60 = 0.35 exactly is kept; 22/60 > 0.35 is dropped
    used = ws.recall("kiwi mango update")["queryUsed"]
    assert used["terms"] == ["kiwi"]
    assert used["droppedTerms"] == ["mango", "update"]


def test_distillation_never_leaves_nothing(ws, now_clock, add):
    _common_terms_workspace(add, T.COMMON_TERM_MIN_ENTRIES)
    result = ws.recall("project update")
    assert result["queryUsed"]["terms"] == ["project", "update"]
    assert result["queryUsed"]["droppedTerms"] == []
    assert len(result["items"]) == 10


def test_distill_keeps_first_appearance_order_and_caps_terms(ws):
    tokens = [f"word{i}" for i in range(T.MAX_QUERY_TERMS + 10)]
    kept, dropped = distill(ws.conn, ["beta", "the", "alpha", "beta", *tokens], entry_count=0)
    assert kept[:2] == ["beta", "alpha"] and dropped == ["the"]
    assert len(kept) + len(dropped) == T.MAX_QUERY_TERMS


# ---- FTS5 safety -----------------------------------------------------------------------------

FTS_SYNTAX = [
    '"',
    "'",
    "*",
    "^",
    "NEAR",
    "NEAR(",
    "AND",
    "OR",
    "NOT",
    "content:",
    "col:",
    "(",
    ")",
    "{",
    "}",
    ":",
    "-",
    "+",
    "\x00",
    "\x1b",
    "\u200b",
    "😀",
    "会议",
    "ß",
    "é",
    "\\",
    "%",
    "_",
    ";",
    "--",
    "/*",
    # time-phrase fragments: joined they make "9999 years ago", "after 9999-12-31" …
    "9999",
    "years",
    "ago",
    "after",
    "in",
    "december",
    "9999-12-31",
    "2026-13-45",
    "yesterday",
    "last",
    "week",
]
_QUERY = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(st.sampled_from(FTS_SYNTAX), st.text(max_size=8)), max_size=8).map("".join),
    st.lists(st.one_of(st.sampled_from(FTS_SYNTAX), st.text(max_size=8)), max_size=8).map(" ".join),
)


@pytest.fixture
def fts_ws(ws, now_clock, add):
    for text in [
        "we met near the station",
        "foo bar baz",
        "do not disturb",
        "and or not",
        "会议 记录 🚀",
        "content column filter",
        "Straße café",
    ]:
        add(text)
    return ws


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=_QUERY)
def test_arbitrary_text_as_a_query_never_raises(fts_ws, query):
    if not query.strip():
        with pytest.raises(InvalidArgument):
            fts_ws.recall(query)
        return
    result = fts_ws.recall(query)
    assert isinstance(result["items"], list)
    for term in result["queryUsed"]["terms"]:  # only plain word tokens ever reach FTS5
        assert term and all(ch.isalnum() for ch in term)


@pytest.mark.parametrize("query", ["", " ", "\t\n", "\x1c\x1f", "\u3000"])
def test_empty_or_whitespace_queries_are_invalid(ws, query):
    with pytest.raises(InvalidArgument):
        ws.recall(query)


@pytest.mark.parametrize("query", ["*", "()", '""', "^", ":", "😀🚀", "-- ;"])
def test_queries_without_any_word_return_nothing_quietly(ws, now_clock, add, query):
    add("some entry that should not come back")
    result = ws.recall(query)
    assert result["items"] == []
    assert result["queryUsed"]["terms"] == []


@pytest.mark.parametrize(
    "query, content",
    [
        ("NEAR", "we met near the old station"),
        ("near(", "we met near the old station"),
        ("NOT", "do not disturb the build"),
        ("AND", "salt and pepper"),
        ("OR", "now or never"),
        ("content:foo", "foo fighters concert"),
        ('"unbalanced', "unbalanced budget sheet"),
        ("^anchor", "drop the anchor here"),
        ("crane*", "crane operator schedule"),
        ("(parenthesis", "a parenthesis is missing"),
        ("会议", "周一 会议 记录"),
        ("cafe", "Straße café opens late"),
    ],
)
def test_fts_operators_are_searched_as_plain_words(ws, now_clock, add, query, content):
    hit = add(content)
    add("unrelated entry about gardening")
    assert ids(ws.recall(query)) == [hit]


def test_star_is_not_a_prefix_operator(ws, now_clock, add):
    exact = add("crane operator schedule")
    add("cranberry sauce recipe")
    assert ids(ws.recall("cran*")) == []
    assert ids(ws.recall("crane*")) == [exact]


def test_column_filter_syntax_is_not_interpreted(ws, now_clock, add):
    """'content:foo' in FTS5 syntax would only look at column `content`; as plain words it also
    finds entries that merely mention 'content'."""
    word = add("content strategy notes")
    foo = add("foo fighters concert")
    assert set(ids(ws.recall("content:foo"))) == {word, foo}


def test_match_expression_quotes_every_token():
    assert match_any(['say"hi', "near"]) == '"say""hi" OR "near"'
    assert tokenize('NEAR("a" b*) AND c:d ^e') == ["near", "a", "b", "and", "c", "d", "e"]


# ---- keyword arm ordering and stemming --------------------------------------------------------


def test_keyword_arm_orders_by_relevance(ws, now_clock, add, filler):
    filler()
    adjacent = add("Postgres migration plan for the billing database")
    apart = add(
        "The migration of application logs finished early and later in the week "
        "postgres was tuned for faster writes"
    )
    only_rare = add("Postgres vacuum settings for large tables")
    only_common = add("Migration checklist for the mobile release")
    only_common_long = add("Data migration of the customer archive to cold storage")
    result = ws.recall("postgres migration", hops=0)
    assert ids(result) == [adjacent, apart, only_rare, only_common, only_common_long]
    keyword = [item["breakdown"]["keyword"] for item in result["items"]]
    assert [k["rank"] for k in keyword] == [1, 2, 3, 4, 5]
    scores = [k["score"] for k in keyword]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 5
    # adjacency earns the proximity bonus; the far-apart pair does not
    assert keyword[0]["proximity"] > 0 and keyword[1]["proximity"] == 0
    assert keyword[0]["score"] == pytest.approx(
        keyword[0]["bm25"]
        + T.PROXIMITY_BOOST_WEIGHT * keyword[0]["proximity"]
        + T.FEEDBACK_WEIGHT * keyword[0]["feedback"],
        abs=1e-5,
    )


def test_stemming_matches_other_forms_of_a_word(ws, now_clock, add, filler):
    filler()
    decided = add("We decided to adopt Rust for the parser")
    add("The decimal separator differs by locale")
    assert ids(ws.recall("deciding")) == [decided]
    assert ids(ws.recall("decides")) == [decided]


def test_diacritics_and_case_are_folded(ws, now_clock, add):
    hit = add("Résumé of the Zürich offsite")
    assert ids(ws.recall("resume zurich")) == [hit]
    assert ids(ws.recall("RÉSUMÉ")) == [hit]
