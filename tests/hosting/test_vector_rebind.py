"""Moving a resident workspace to another embedding provider while it serves: bound to the new
one at once, every entry re-embedded in the background with its progress told, writes meanwhile
embedded with the new provider; and a file left on another provider than the one its host is
given (a rebind cut short) re-embedded when it opens, never served with the other's vectors."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future

from minisphere.engine.embedding import make_provider
from minisphere.hosting.host import WorkspaceHost
from tests.support.hosts import BY_HAND

ENTRIES = 40
WRITES_DURING = 25


def hash_provider(dim: int):
    return make_provider({"provider": "hash", "dim": dim})


def host_with(tmp_path, provider) -> WorkspaceHost:
    return WorkspaceHost(
        "ws-rebind", tmp_path / "ws-rebind" / "workspace.db", embedder=provider, tuning=BY_HAND
    )


def capture(host, text: str) -> dict:
    answer = Future()

    def queue(prepared: Future):
        host.calls.submit_write("capture", {"content": text}, answer.set_result, prepared.result())

    host.calls.prepare_write("capture", {"content": text}).add_done_callback(queue)
    return answer.result(timeout=60).unwrap()


def recall(host, query: str) -> dict:
    started = host.calls.start_read("recall", {"query": query})
    return host.calls.submit_read("recall", {"query": query}, started).result(timeout=60)[0]


def test_a_rebind_re_embeds_every_entry_while_writes_go_on(tmp_path):
    old, new = hash_provider(16), hash_provider(32)
    host = host_with(tmp_path, old)
    try:
        for i in range(ENTRIES):
            capture(host, f"entry {i} about {uuid.uuid4().hex[:8]} gardens")
        seen: list[tuple[int, int]] = []
        rebinding = threading.Thread(
            target=lambda: host.rebind_vectors(new, lambda done, total: seen.append((done, total)))
        )
        rebinding.start()
        during = [
            capture(host, f"written during the rebind {i}")["id"] for i in range(WRITES_DURING)
        ]
        rebinding.join(60)
        assert not rebinding.is_alive()
        state = host.workspace.vectors.state()
        assert state == {"provider": new.name, "dim": 32, "missing": 0}
        # its own count ends complete; a write's after-commit backfill may have embedded some
        # of the entries first (the file's count of entries without a vector is the truth)
        assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1]
        answer = recall(host, "written during the rebind 3")
        assert answer["queryUsed"]["vector"]["provider"] == new.name
        assert during[3] in [item["id"] for item in answer["items"]]
    finally:
        host.close()


def test_a_file_left_on_another_provider_is_re_embedded_when_it_opens(tmp_path):
    """The blueprint names the new provider before the file follows: a process killed before
    the rebind began (or halfway) leaves the file on the old one. The next open brings it to
    the provider it is given, where a plain engine open refuses such a file."""
    old, new = hash_provider(16), hash_provider(32)
    host = host_with(tmp_path, old)
    for i in range(ENTRIES):
        capture(host, f"entry {i} kept through the move")
    host.close()
    again = host_with(tmp_path, new)
    try:
        assert again.workspace.vectors.state() == {"provider": new.name, "dim": 32, "missing": 0}
        assert recall(again, "entry 7 kept")["queryUsed"]["vector"]["provider"] == new.name
    finally:
        again.close()


def test_a_zero_binding_workspace_rebound_serves_vectors_without_reopening(tmp_path):
    """Its readers were opened without the vector extension: the rebind gives it new ones."""
    host = host_with(tmp_path, None)
    try:
        for i in range(10):
            capture(host, f"plain entry {i} on harbours")
        host.rebind_vectors(hash_provider(32))
        assert host.workspace.vectors.state()["missing"] == 0
        assert (
            recall(host, "plain entry 4")["queryUsed"]["vector"]["provider"]
            == hash_provider(32).name
        )
    finally:
        host.close()
