"""`forget` is physically permanent: the forgotten text leaves the live file, its WAL and the
FTS5 index, not just the rows (secure_delete on the write connection, FTS5 secure-delete,
a WAL truncated after the forget)."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine.workspace import Workspace


def traces(path: Path, secret: bytes) -> list[str]:
    """The files of the workspace (file, WAL, shared memory) that still hold `secret`."""
    found = []
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if candidate.exists() and secret in candidate.read_bytes():
            found.append(candidate.name)
    return found


def test_forgotten_text_is_in_neither_the_file_nor_its_wal(tmp_path):
    path = tmp_path / "w.db"
    ws = Workspace(path, synchronous="NORMAL")
    for i in range(50):  # neighbours on the same pages
        ws.capture(f"an ordinary note number {i} about the build")
    secret_id = ws.capture("the vault passphrase is zebra-quasar-4417")["id"]
    ws.update(secret_id, "the vault passphrase is zebra-quasar-4417 (rotated: okapi-nebula-9902)")
    ws.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # old pages reach the main file too
    ws.forget(secret_id)
    for secret in (b"zebra-quasar-4417", b"okapi-nebula-9902", b"zebra", b"okapi"):
        assert traces(path, secret) == [], secret
    assert ws.get_count() == {"count": 50}
    ws.close()
    for secret in (b"zebra-quasar", b"okapi-nebula"):
        assert traces(path, secret) == []


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(word=st.from_regex(r"[a-z]{9,14}", fullmatch=True), others=st.integers(0, 40))
def test_any_forgotten_word_leaves_no_bytes_behind(tmp_path_factory, word, others):
    secret = f"q{word}x"  # never a word of the other notes
    path = tmp_path_factory.mktemp("forget") / "w.db"
    ws = Workspace(path, synchronous="NORMAL")
    for i in range(others):
        ws.capture(f"filler note {i} with common words")
    entry = ws.capture(f"remember {secret} for later", tags=[secret[:60]])["id"]
    ws.append(entry, f"and {secret} again")
    ws.forget(entry)
    assert traces(path, secret.encode()) == []
    ws.close()


def test_a_file_whose_checkpoints_are_left_elsewhere_is_never_checkpointed_by_a_forget(tmp_path):
    """A replicated file: a checkpoint of ours racing the replicator left a replica that
    restored broken, so a forget's WAL fold is left to whoever replicates it (who unregisters
    first) and `checkpoints.truncate` still folds it on request."""
    path = tmp_path / "w.db"
    ws = Workspace(path, synchronous="NORMAL")
    ws.checkpoints.leave_to_replicator()
    entry = ws.capture("the vault passphrase is zebra-quasar-4417")["id"]
    ws.forget(entry)
    ws.capture("a later write: an owed checkpoint would run at its commit")
    assert Path(f"{path}-wal").stat().st_size > 0  # nothing folded the WAL
    assert ws.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert ws.checkpoints.truncate()  # the replicator's own fold
    assert traces(path, b"zebra-quasar-4417") == []
    ws.close()
