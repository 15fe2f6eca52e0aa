"""Every workspace method through the client's typed methods, sync and async, against the real
app over real engine files: options go out in camelCase, answers come back as the client's
models, and what one call wrote is what the next one reads."""

from __future__ import annotations

from pydantic.alias_generators import to_snake

from minisphere.client import AsyncWorkspaceClient, WorkspaceClient
from minisphere.client.models import CaptureResult, Entry, RecallResult
from minisphere.engine import constants as C
from minisphere.engine.methods import METHODS
from tests.client.helpers import got, new_workspace


def test_the_client_has_a_typed_method_for_every_contract_method():
    for door in (WorkspaceClient, AsyncWorkspaceClient):
        missing = [name for name in METHODS if not callable(getattr(door, to_snake(name), None))]
        assert missing == [], f"{door.__name__} lacks {missing}"


def test_entry_writes_round_trip_as_typed_answers(run):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "writes")
        stored = await got(
            ws.capture(
                "The billing service runs on Postgres",
                tags=["db"],
                kind="semantic",
                claim_tag="VERIFIED",
                evidence_ref="PR-7",
                importance=0.75,
                source="notes",
            )
        )
        assert isinstance(stored, CaptureResult) and stored.outcome == "stored"
        entry = await got(ws.get_entry(stored.id))
        assert isinstance(entry, Entry)
        assert (
            entry.content,
            entry.tags,
            entry.kind,
            entry.claim_tag,
            entry.evidence_ref,
            entry.importance,
            entry.source,
        ) == (
            "The billing service runs on Postgres",
            ["db"],
            "semantic",
            "VERIFIED",
            "PR-7",
            0.75,
            "notes",
        )
        again = await got(ws.capture("The billing service runs on Postgres"))
        assert (again.outcome, again.id, again.match_id) == ("blocked", None, stored.id)

        appended = await got(ws.append(stored.id, "since 2021", tags=["history"]))
        assert isinstance(appended, Entry)
        assert appended.content == "The billing service runs on Postgres\nsince 2021"
        assert set(appended.tags) == {"db", "history"}
        updated = await got(ws.update(stored.id, "The billing service runs on MySQL"))
        assert updated.content == "The billing service runs on MySQL"
        assert updated.updated_at >= appended.updated_at
        deprecated = await got(ws.set_status(stored.id, "deprecated"))
        assert deprecated.status == "deprecated"
        assert (await got(ws.get_entry(stored.id))).model_dump() == deprecated.model_dump()

        forgotten = await got(ws.forget(stored.id))
        assert forgotten == {"forgotten": True, "id": stored.id}
        assert await got(ws.get_count()) == 0

    run(scenario)


def test_links_round_trip_through_connections_and_graph_view(run):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "links")
        decision = (await got(ws.capture("We chose SQLite per workspace", kind="semantic"))).id
        meeting = (await got(ws.capture("The design meeting on Tuesday", kind="episodic"))).id
        linked = await got(
            ws.link(meeting, decision, "caused_by", weight=0.5, metadata={"by": "test"})
        )
        assert linked["created"] is True
        assert (
            linked["edge"]["src"],
            linked["edge"]["dst"],
            linked["edge"]["weight"],
            linked["edge"]["metadata"],
        ) == (meeting, decision, 0.5, {"by": "test"})
        around = await got(ws.connections(decision))
        assert [(i["edge"]["type"], i["entry"]["id"]) for i in around["items"]] == [
            ("caused_by", meeting)
        ]
        graph = await got(ws.graph_view([decision], hops=1))
        assert {node["id"] for node in graph["nodes"]} == {decision, meeting}
        assert await got(ws.unlink(meeting, decision, "caused_by")) == {"removed": True}
        assert (await got(ws.connections(decision)))["items"] == []
        assert await got(ws.unlink(meeting, decision, "caused_by")) == {"removed": False}

    run(scenario)


def test_reads_summarize_what_was_written(run):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "reads")
        ids = [
            (
                await got(
                    ws.capture(
                        f"tern colony {n} nests on the north cliff",
                        tags=["birds"] + (["cliff"] if n % 2 else []),
                        kind="episodic",
                    )
                )
            ).id
            for n in range(5)
        ]
        assert await got(ws.get_count()) == 5
        assert (await got(ws.get_tags()))["tags"] == [
            {"tag": "birds", "count": 5},
            {"tag": "cliff", "count": 2},
        ]
        stats = await got(ws.get_stats())
        assert stats["count"] == 5 and stats["byKind"] == {"episodic": 5}
        brief = await got(ws.get_brief())
        assert brief["count"] == 5 and brief["recentActivity"]["captured"] == 5

        recent = await got(ws.list_recent(n=2, tag="cliff"))
        assert all(isinstance(e, Entry) for e in recent)
        assert len(recent) == 2 and {e.id for e in recent} == {ids[1], ids[3]}

        found = await got(ws.recall("tern colony north cliff", top_k=3))
        assert isinstance(found, RecallResult) and len(found.items) == 3
        assert {item.id for item in found.items} <= set(ids)
        assert all(item.score > 0 and "final" in item.breakdown for item in found.items)
        assert found.query_used["filters"] == {"kind": None, "tag": None}
        tagged = await got(ws.recall("tern colony", tag="cliff"))
        assert {item.id for item in tagged.items} == {ids[1], ids[3]}
        # recall counts what it returned: the next read shows it
        assert (await got(ws.get_entry(ids[1]))).recall_count >= 1

    run(scenario)


def test_call_sends_any_method_with_snake_case_options_in_camel_case(run):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "calls")
        stored = await got(
            ws.call(
                "capture",
                content="A fact given through call",
                claim_tag="INFERRED",
                evidence_ref="call-test",
            )
        )
        assert stored["outcome"] == "stored"
        entry = await got(ws.call("getEntry", id=stored["id"]))
        assert (entry["claimTag"], entry["evidenceRef"]) == ("INFERRED", "call-test")
        assert (await got(ws.call("listRecent", n=1)))["items"][0]["id"] == stored["id"]
        # None options are not sent at all, so the method's default applies
        assert (await got(ws.call("getCount", tag=None))) == {"count": 1}

    run(scenario)


def test_recall_budget_and_full_reach_the_client_unchanged(run):
    async def scenario(admin):
        ws, _ = await new_workspace(admin, "budget")
        long = "kittiwake " + "x" * (C.MAX_CONTENT_BYTES // 8)
        entry_id = (await got(ws.capture(long))).id
        cut = (await got(ws.recall("kittiwake"))).items[0]
        assert cut.id == entry_id and cut.truncated is True and cut.contentChars == len(long)
        assert len(cut.content) < len(long)
        whole = (await got(ws.recall("kittiwake", full=True))).items[0]
        assert whole.content == long and whole.truncated is False

    run(scenario)


def test_the_staleness_pass_marks_what_turned_stale(run, clock):
    async def scenario(admin):
        await new_workspace(admin, "stale")
        ws = admin.workspace("stale")  # the admin token: maintenance allowed
        volatile = (await got(ws.capture("The API is down right now"))).id
        durable = (await got(ws.capture("All timestamps are stored in UTC"))).id
        assert (await got(ws.run_staleness_pass(limit=10)))["marked"] == 0
        clock.advance(ms=C.STALE_AFTER_MS["volatile"])
        result = await got(ws.run_staleness_pass(limit=10))
        assert (result["marked"], result["remaining"]) == (1, 0)
        assert (await got(ws.get_entry(volatile))).stale is True
        assert (await got(ws.get_entry(durable))).stale is False

    run(scenario)
