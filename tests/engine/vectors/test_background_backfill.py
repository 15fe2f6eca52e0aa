"""A backfill (every entry lacking a vector embedded again) never holds the group-commit writer:
a write that sets one off is answered at once while the backfill runs on a thread of its own,
one at a time (asked again meanwhile, it runs once more after), and recall meanwhile still
finds the entries without vectors."""

from __future__ import annotations

import threading
from collections import Counter

from minisphere.engine.embedding.hash_provider import HashProvider
from minisphere.engine.workspace import Workspace
from minisphere.errors import WorkspaceClosed
from minisphere.hosting.group_commit import GroupCommitWriter
from tests.engine.vectors.helpers import ChosenVectors, without_vector

WAIT_S = 30  # a bound for a wait that should end at once, not a measure of anything
OLD_ENTRIES = [f"old entry {i} about the harbour crane" for i in range(5)]


class GatedEmbedder:
    """A real provider (hash features) whose embedding of the `held` texts waits for `gate`:
    a slow model, held for as long as the test wants. Records who embedded what."""

    name = "gated-16"
    dim = 16

    def __init__(self, held: list[str]):
        self.held = set(held)
        self.inner = HashProvider(self.dim)
        self.gate, self.entered = threading.Event(), threading.Event()
        self.held_on: list[str] = []  # the threads that embedded held texts
        self.embedded: Counter[str] = Counter()

    def embed(self, texts: list[str]):
        if self.held.intersection(texts):
            self.held_on.append(threading.current_thread().name)
            self.entered.set()
            assert self.gate.wait(WAIT_S), "the gate was never opened"
        self.embedded.update(texts)
        return self.inner.embed(texts)


def submit(writer: GroupCommitWriter, body: dict, prepared) -> tuple[threading.Event, list]:
    answered, replies = threading.Event(), []
    writer.submit("capture", body, lambda reply: (replies.append(reply), answered.set()), prepared)
    return answered, replies


def test_a_write_after_a_rebind_is_answered_while_the_backfill_is_held(tmp_path, clock):
    ws = Workspace(tmp_path / "w.db", clock=clock, embedder=ChosenVectors())
    for text in OLD_ENTRIES:
        ws.capture(text)
    writer = GroupCommitWriter(ws, name="backfill-test")
    gated = GatedEmbedder(OLD_ENTRIES)
    try:
        # prepared (embedded) before the rebind, committed after it: its vector is the old
        # model's, so the commit leaves the entry for a backfill
        bodies = [{"content": f"written across the rebind {n}"} for n in range(2)]
        stale = [ws.prepare([("capture", body)])[0] for body in bodies]
        ws.switch_vectors(gated, replace=True)

        first, first_reply = submit(writer, bodies[0], stale[0])
        assert gated.entered.wait(WAIT_S), "no backfill began"
        assert gated.held_on == [gated.held_on[0]] and not gated.held_on[0].startswith(
            "group-commit-"
        ), f"the backfill ran on the writer thread {gated.held_on}"
        assert first.wait(WAIT_S) and first_reply[0].ok
        second, second_reply = submit(writer, bodies[1], stale[1])  # asks for one more
        assert second.wait(WAIT_S) and second_reply[0].ok

        # the backfill is still held: the old entries have no vector, and recall still finds
        # them by their words
        assert ws.vectors.state()["missing"] == len(OLD_ENTRIES) + 2
        found = ws.recall("harbour crane")["items"]
        assert {item["content"] for item in found} >= set(OLD_ENTRIES)

        gated.gate.set()
        assert ws.vectors.wait_for_backfills(WAIT_S)
        assert without_vector(ws) == 0
        assert all(gated.embedded[text] == 1 for text in OLD_ENTRIES), gated.embedded
        assert len(gated.held_on) == 1  # one backfill embedded them; the second found none
    finally:
        gated.gate.set()
        writer.close()
        ws.close()


def test_a_backfill_cut_short_by_a_close_says_so_rather_than_done(tmp_path, clock):
    """A rebind's backfill stopped by a hibernation must not be reported as done: it stops at
    its next batch and raises, and the next open embeds the rest."""
    ws = Workspace(tmp_path / "w.db", clock=clock, embedder=ChosenVectors())
    for text in OLD_ENTRIES:
        ws.capture(text)
    gated = GatedEmbedder(OLD_ENTRIES)
    vectors = ws.switch_vectors(gated, replace=True)
    outcome: list = []

    def rebind() -> None:
        try:
            outcome.append(vectors.backfill(batch_size=1))
        except Exception as exc:  # noqa: BLE001 - what the rebind's runner would report
            outcome.append(exc)

    running = threading.Thread(target=rebind)
    try:
        running.start()
        assert gated.entered.wait(WAIT_S)
        vectors.close()  # what closing the workspace does first
        gated.gate.set()
        running.join(WAIT_S)
        assert isinstance(outcome[0], WorkspaceClosed), outcome
        assert vectors.state()["missing"] == len(OLD_ENTRIES) - 1  # the batch under way landed
    finally:
        gated.gate.set()
        ws.close()
