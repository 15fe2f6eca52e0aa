"""Reads as of a moment (`asOf`): recall, listRecent and getEntry answer from what the workspace
held then — the entries that existed, the content current then, the supersedes edges made by
then — and never show a forgotten entry; a malformed or future moment is refused."""

from __future__ import annotations

import pytest

from minisphere.engine.as_of import parse_as_of
from minisphere.engine.clock import iso_utc
from minisphere.errors import InvalidArgument, NotFound

OLD = "The billing service deploys to region us-east-1 on Fridays"
NEW = "Billing moved: eu-west-1 is the region now"
QUERY = "billing service deploys region Fridays"


def at(ms: int) -> str:
    return iso_utc(ms, milliseconds=True)


def recalled(ws, query: str, moment: int, **options) -> list[tuple[str, str]]:
    answer = ws.recall(query, asOf=at(moment), **options)
    return [(item["id"], item["content"]) for item in answer["items"]]


def test_recall_as_of_answers_the_words_an_entry_held_then_not_todays(ws, clock):
    entry = ws.capture(OLD)["id"]
    clock.advance(days=1)
    before_update = clock.now_ms()
    clock.advance(days=1)
    ws.update(entry, "The billing service deploys to region ap-south-1 on Fridays")
    assert recalled(ws, QUERY, before_update) == [(entry, OLD)]
    assert ws.recall(QUERY)["items"][0]["content"].endswith("ap-south-1 on Fridays")


def test_recall_as_of_finds_an_entry_by_words_it_has_since_lost(ws, clock):
    entry = ws.capture("Quarterly offsite booked at the lighthouse hotel")["id"]
    moment = clock.advance(seconds=5)
    clock.advance(seconds=5)
    ws.update(entry, "Quarterly offsite cancelled")
    assert ws.recall("lighthouse hotel")["items"] == []
    assert [i for i, _ in recalled(ws, "lighthouse hotel", moment)] == [entry]


def test_a_supersedes_link_made_after_the_moment_does_not_demote_the_old_entry(ws, clock):
    old = ws.capture(OLD)["id"]
    clock.advance(days=1)
    new = ws.capture(NEW)["id"]
    moment = clock.advance(days=1)  # both entries exist, the link does not yet
    clock.advance(days=1)
    ws.link(new, old, "supersedes")
    then = ws.recall(QUERY, asOf=at(moment))["items"]
    assert then[0]["id"] == old and then[0]["supersededBy"] is None
    assert ws.get_entry(old)["supersession"]["supersededBy"] == new
    detail = ws.call("getEntry", {"id": old, "asOf": at(moment)})
    assert detail["supersession"] == {"supersededBy": None, "chain": [old], "supersedes": []}
    assert detail["edgeCount"] == 0
    later = ws.recall(QUERY, asOf=at(clock.now_ms()))["items"]
    assert [i["id"] for i in later][:2] == [new, old] and later[1]["supersededBy"] == new


def test_an_entry_created_after_the_moment_is_absent_from_every_read_as_of_it(ws, clock):
    first = ws.capture("Deploy window is Tuesday morning")["id"]
    moment = clock.advance(seconds=30)
    clock.advance(seconds=30)
    later = ws.capture("Deploy window is Thursday evening")["id"]
    assert [i for i, _ in recalled(ws, "deploy window", moment)] == [first]
    listed = ws.list_recent(asOf=at(moment))["items"]
    assert [e["id"] for e in listed] == [first]
    with pytest.raises(NotFound, match="did not exist yet"):
        ws.call("getEntry", {"id": later, "asOf": at(moment)})


def test_a_forgotten_entry_is_absent_from_the_past_too(ws, clock):
    gone = ws.capture("The door code of the lab is 4417")["id"]
    kept = ws.capture("The lab opens at eight")["id"]
    moment = clock.advance(seconds=10)
    clock.advance(seconds=10)
    ws.forget(gone)
    assert [i for i, _ in recalled(ws, "lab door code", moment)] == [kept]
    assert [e["id"] for e in ws.list_recent(asOf=at(moment))["items"]] == [kept]
    with pytest.raises(NotFound):
        ws.call("getEntry", {"id": gone, "asOf": at(moment)})


def test_get_entry_as_of_shows_the_revisions_and_update_time_of_then(ws, clock):
    entry = ws.capture("Budget is 10k")["id"]
    clock.advance(seconds=10)
    ws.update(entry, "Budget is 12k")
    moment = clock.advance(seconds=10)
    clock.advance(seconds=10)
    ws.update(entry, "Budget is 15k")
    then = ws.call("getEntry", {"id": entry, "asOf": at(moment)})
    assert then["content"] == "Budget is 12k"
    assert then["revisionCount"] == 1 and [r["content"] for r in then["revisions"]] == [
        "Budget is 10k"
    ]
    assert then["updatedAt"] == moment - 10_000
    assert ws.get_entry(entry)["content"] == "Budget is 15k"


def test_a_recall_as_of_says_which_moment_it_searched(ws, clock):
    ws.capture("Ship the beta on Monday")
    moment = clock.now_ms()
    used = ws.recall("ship beta", asOf=iso_utc(moment))["queryUsed"]
    assert used["asOf"] == at(moment - moment % 1000)
    assert "asOf" not in ws.recall("ship beta")["queryUsed"]


def test_a_moment_before_the_first_entry_answers_nothing(ws, clock):
    start = clock.now_ms()
    clock.advance(seconds=1)
    ws.capture("Anything at all")
    assert ws.recall("anything", asOf=at(start - 1))["items"] == []
    assert ws.list_recent(asOf=at(start - 1))["items"] == []


@pytest.mark.parametrize(
    "text",
    [
        "yesterday",
        "2026-09-01",
        "2026-09-01T12:00Z",
        "2026-09-01T12:00:00",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "1788000000000",
        " 2026-09-01T12:00:00Z",
    ],
)
def test_an_as_of_that_is_not_an_rfc3339_date_time_is_refused(ws, text):
    for method, body in [
        ("recall", {"query": "x", "asOf": text}),
        ("listRecent", {"asOf": text}),
        ("getEntry", {"id": ws.capture("one entry")["id"], "asOf": text}),
    ]:
        with pytest.raises(InvalidArgument, match="asOf"):
            ws.call(method, body)


def test_an_as_of_in_the_future_beyond_the_skew_is_refused_and_within_it_reads_now(ws, clock):
    ws.capture("Release notes drafted")
    with pytest.raises(InvalidArgument, match="future"):
        ws.recall("release notes", asOf=at(clock.now_ms() + 61_000))
    near = ws.recall("release notes", asOf=at(clock.now_ms() + 59_000))
    assert len(near["items"]) == 1 and near["queryUsed"]["asOf"] == at(clock.now_ms())


def test_offsets_and_fractions_name_the_same_moment():
    now = 1_788_000_000_000  # 2026-08-29T10:40:00Z
    assert parse_as_of("2026-08-29T10:40:00.123Z", now + 1000) == now + 123
    assert parse_as_of("2026-08-29T12:40:00.5+02:00", now) == parse_as_of(
        "2026-08-29T10:40:00.500Z", now
    )
    assert parse_as_of("2026-08-29t10:40:00z", now) == parse_as_of("2026-08-29T10:40:00Z", now)
