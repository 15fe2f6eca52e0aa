"""The file's record of what its forgets still owe outside it (engine/forget_ledger.py): a
clean-up settles at most the forgets the file has made, so a file restored from before some of
them shows the next ones as owed again, and the history number moves only with a settle."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minisphere.engine.forget_ledger import REPLICA_HISTORY, SNAPSHOT_VERSIONS
from minisphere.engine.workspace import Workspace

STEPS = st.lists(
    st.one_of(
        st.just(("forget", 0)),
        st.tuples(st.just("settle"), st.integers(min_value=0, max_value=8)),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(steps=STEPS)
def test_a_settle_never_covers_forgets_the_file_has_not_made(tmp_path_factory, steps):
    ws = Workspace(tmp_path_factory.mktemp("ledger") / "workspace.db", synchronous="OFF")
    try:
        made, settled = 0, 0
        for kind, value in steps:
            if kind == "forget":
                ws.forget(ws.capture("forgotten at once")["id"])
                made += 1
            else:
                ws.forget_ledger.settle(REPLICA_HISTORY, value, history=value)
                settled = max(settled, min(made, value))
            assert ws.forget_ledger.owed(REPLICA_HISTORY) == made - settled
            assert ws.forget_ledger.owed(SNAPSHOT_VERSIONS) == made
    finally:
        ws.close()


def test_the_history_number_is_the_last_one_settled(tmp_path):
    ws = Workspace(tmp_path / "workspace.db", synchronous="OFF")
    try:
        assert ws.forget_ledger.history() == 0
        ws.forget(ws.capture("one")["id"])
        ws.forget_ledger.settle(REPLICA_HISTORY, 1, history=3)
        assert ws.forget_ledger.history() == 3 and ws.forget_ledger.owed(REPLICA_HISTORY) == 0
        ws.forget_ledger.settle(REPLICA_HISTORY, 1, history=4)  # same forgets, a new history
        assert ws.forget_ledger.history() == 4
    finally:
        ws.close()
