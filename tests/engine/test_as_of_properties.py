"""Reads as of a moment against a model: random sequences of capture, update, supersedes links
and forget at increasing clock times, then recall, listRecent and getEntry with `asOf` at random
moments must agree with what a plain replay of the history says the workspace held then."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine.clock import ManualClock, iso_utc
from minisphere.engine.workspace import Workspace
from minisphere.errors import NotFound

WORDS = ["apple", "river", "copper", "violet", "falcon", "meadow", "harbor", "lantern"]

TEXT = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)
CAPTURE = st.tuples(st.just("capture"), TEXT)
OPS = st.tuples(
    st.lists(CAPTURE, min_size=1, max_size=4),  # something to update, link and forget
    st.lists(
        st.one_of(
            CAPTURE,
            st.tuples(st.just("update"), st.integers(0, 50), TEXT),
            st.tuples(st.just("link"), st.integers(0, 50), st.integers(0, 50)),
            st.tuples(st.just("forget"), st.integers(0, 50)),
        ),
        min_size=4,
        max_size=25,
    ),
).map(lambda parts: parts[0] + parts[1])


@dataclass
class Model:
    """What happened, with times: enough to say what the workspace held at any moment."""

    created: dict[str, int] = field(default_factory=dict)
    contents: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # (from, words)
    edges: list[tuple[str, str, int]] = field(default_factory=list)  # (newer, older, made at)
    forgotten: set[str] = field(default_factory=set)

    def order(self) -> list[str]:
        return sorted(self.created, key=lambda i: self.created[i])

    def held(self, moment: int) -> dict[str, str]:
        return {
            entry: [c for since, c in self.contents[entry] if since <= moment][-1]
            for entry in self.order()
            if entry not in self.forgotten and self.created[entry] <= moment
        }

    def head(self, entry: str, moment: int) -> str | None:
        """The newest entry replacing `entry` that nothing replaces in turn (all are live)."""
        held = self.held(moment)
        newer: dict[str, set[str]] = {}
        for src, dst, made in self.edges:
            if made <= moment and src in held and dst in held:
                newer.setdefault(dst, set()).add(src)
        reach, stack = set(), list(newer.get(entry, ()))
        while stack:
            node = stack.pop()
            if node not in reach:
                reach.add(node)
                stack.extend(newer.get(node, ()))
        heads = [n for n in reach if not newer.get(n)]
        return max(heads, key=lambda n: (self.created[n], n)) if heads else None


def replay(ws: Workspace, clock: ManualClock, ops, model: Model) -> None:
    serial = 0
    for op in ops:
        clock.advance(seconds=1)
        now = clock.now_ms()
        alive = [e for e in model.order() if e not in model.forgotten]
        if op[0] == "capture":
            serial += 1
            text = " ".join([*op[1], f"n{serial}"])
            entry = ws.capture(text)["id"]
            model.created[entry], model.contents[entry] = now, [(now, text)]
        elif op[0] == "update" and alive:
            serial += 1
            entry, text = alive[op[1] % len(alive)], " ".join([*op[2], f"n{serial}"])
            ws.update(entry, text)
            model.contents[entry].append((now, text))
        elif op[0] == "link" and len(alive) >= 2:
            ends = sorted({op[1] % len(alive), op[2] % len(alive)})
            if len(ends) < 2:
                continue
            older, newer = alive[ends[0]], alive[ends[1]]
            ws.link(newer, older, "supersedes")  # newer created later: never a cycle
            if not any(s == newer and d == older for s, d, _ in model.edges):
                model.edges.append((newer, older, now))
        elif op[0] == "forget" and alive:
            entry = alive[op[1] % len(alive)]
            ws.forget(entry)
            model.forgotten.add(entry)
            model.edges = [e for e in model.edges if entry not in e[:2]]


def plain_recalls(held: dict[str, str], folder: Path) -> dict[str, set[str]]:
    """What a plain recall of each word answers (as contents) from a workspace holding exactly
    `held`: the oracle of which entries an as-of recall finds (a recall's feedback round may
    add entries without the word, so the word alone does not say)."""
    with Workspace(folder / "oracle.db", clock=ManualClock(), synchronous="OFF") as oracle:
        for text in held.values():
            oracle.capture(text)
        answers = {
            word: {i["content"] for i in oracle.recall(word, topK=50, hops=0)["items"]}
            for word in WORDS
        }
    (folder / "oracle.db").unlink()
    return answers


def check_moment(ws: Workspace, model: Model, moment: int, folder: Path) -> None:
    held = model.held(moment)
    as_of = iso_utc(moment, milliseconds=True)
    listed = ws.list_recent(n=200, asOf=as_of)["items"]
    assert [(e["id"], e["content"]) for e in listed] == [(e, held[e]) for e in reversed(held)]
    for entry in model.created:
        if entry in held:
            detail = ws.call("getEntry", {"id": entry, "asOf": as_of})
            assert detail["content"] == held[entry]
            assert detail["supersession"]["supersededBy"] == model.head(entry, moment)
        elif entry not in model.forgotten:
            try:
                ws.call("getEntry", {"id": entry, "asOf": as_of})
            except NotFound:
                continue
            raise AssertionError(f"{entry} was created after {as_of} but getEntry found it")
    expected = plain_recalls(held, folder)
    for word in WORDS:
        items = ws.recall(word, topK=50, hops=0, asOf=as_of)["items"]
        answered = [item["id"] for item in items]
        for item in items:
            assert item["content"] == held[item["id"]]
            assert item["supersededBy"] == model.head(item["id"], moment)
            # never before a replacement of it answered beside it
            if item["supersededBy"] in answered:
                assert answered.index(item["supersededBy"]) < answered.index(item["id"])
        assert {item["content"] for item in items} == expected[word]


# a moment: where in the history (a share of its ops) and an offset into that op's second (0:
# the very millisecond of the op)
MOMENTS = st.lists(
    st.tuples(st.floats(0, 1), st.sampled_from([0, 1, 500, 999])), min_size=1, max_size=4
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, picks=MOMENTS)
def test_reads_as_of_any_moment_agree_with_a_replay_of_the_history(ops, picks):
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()
        start = clock.now_ms()
        with Workspace(Path(tmp) / "asof.db", clock=clock, synchronous="OFF") as ws:
            model = Model()
            replay(ws, clock, ops, model)
            end = clock.advance(seconds=1)
            for share, offset in picks:
                moment = start + round(share * len(ops)) * 1000 + offset
                check_moment(ws, model, min(moment, end), Path(tmp))
            check_moment(ws, model, end, Path(tmp))
