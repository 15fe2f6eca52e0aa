"""The memory tool's files stay the tool's own: ordinary captures, however tagged, never hide
a file or stand in for one; one path is one entry even when two creates race; a delete leaves
no text of the path behind; paths are compared in one Unicode form and stay within the length
the tool can reach; wrong-typed arguments and an unreachable service are the tool's errors,
never exceptions in the caller's loop. The workspace is real (engine files behind the real
app, reached by the HTTP client)."""

from __future__ import annotations

import http.server
import socket
import threading
import unicodedata

import pytest

from minisphere.client import Client
from minisphere.integrations.anthropic_memory import MAX_PATH_CHARS, WorkspaceMemory
from minisphere.integrations.memory_files import FILES_TAG, header, path_tag
from tests.integrations.conftest import live_workspace


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with live_workspace(tmp_path_factory.mktemp("memory-files"), seed=False) as live:
        yield live


@pytest.fixture
def workspace(service):
    created = service.admin.create_workspace()
    return service.admin.workspace(created.workspace.id, created.token)


def texts_in(ws) -> list[str]:
    return [item.content for item in ws.list_recent(n=200)]


def test_ordinary_captures_tagged_memory_file_neither_hide_a_file_nor_let_it_be_made_twice(
    workspace,
):
    memory = WorkspaceMemory(workspace)
    memory.execute(
        {"command": "create", "path": "/memories/old.txt", "file_text": "first version\n"}
    )
    for n in range(205):
        workspace.capture(f"ordinary note {n}", tags=["memory file"])
    text, is_error = memory.run(
        {"command": "create", "path": "/memories/old.txt", "file_text": "second version\n"}
    )
    assert is_error and text == "File /memories/old.txt already exists", text
    assert "\tfirst version\n" in memory.execute({"command": "view", "path": "/memories/old.txt"})
    assert memory.execute({"command": "delete", "path": "/memories/old.txt"}) == (
        "Successfully deleted /memories/old.txt"
    )
    assert workspace.get_count() == 205
    assert not [t for t in texts_in(workspace) if "version" in t]


class RacingHandle:
    """A workspace handle whose first write runs `meanwhile` first: the other create of the
    same path lands after this one found the path free and before it writes."""

    def __init__(self, handle, meanwhile):
        self.handle, self.meanwhile = handle, meanwhile

    def call_tool(self, name, arguments=None, **options):
        if name == "capture" and self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        return self.handle.call_tool(name, arguments, **options)


def test_two_creates_of_one_path_make_one_file_and_the_later_one_is_told_it_exists(workspace):
    winner = WorkspaceMemory(workspace)
    won: list[tuple[str, bool]] = []

    def the_other_create():
        won.append(
            winner.run({"command": "create", "path": "/memories/race.md", "file_text": "mine\n"})
        )

    loser = WorkspaceMemory(RacingHandle(workspace, the_other_create))
    lost = loser.run({"command": "create", "path": "/memories/race.md", "file_text": "yours\n"})
    assert won == [("File created successfully at: /memories/race.md", False)]
    assert lost == ("File /memories/race.md already exists", True)
    assert workspace.get_count() == 1
    assert "\tmine\n" in winner.execute({"command": "view", "path": "/memories/race.md"})


def test_delete_forgets_every_entry_a_path_has(workspace):
    """A second entry of a path (written by hand with the tool's header and tags) goes with the
    first: a delete leaves no text of the path behind."""
    memory = WorkspaceMemory(workspace)
    memory.execute({"command": "create", "path": "/memories/twice.md", "file_text": "one"})
    key = "/memories/twice.md"
    workspace.capture(f"{header(key)}\ntwo", tags=[FILES_TAG, path_tag(key)])
    assert workspace.get_count() == 2
    memory.execute({"command": "delete", "path": "/memories/twice.md"})
    assert workspace.get_count() == 0


def create_together(workspace, path: str, racers: int) -> list[tuple[str, bool]]:
    """The answers of `racers` creates of `path` sent at once, each by its own backend."""
    start = threading.Barrier(racers)
    answers: list[tuple[str, bool]] = []

    def create(n: int) -> None:
        memory = WorkspaceMemory(workspace)
        start.wait()
        answers.append(memory.run({"command": "create", "path": path, "file_text": f"racer {n}"}))

    threads = [threading.Thread(target=create, args=(n,)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_creates_of_one_path_from_several_threads_make_one_file(workspace):
    """Several agents' loops creating one path at once."""
    racers = 4
    for round_ in range(3):
        path = f"/memories/together-{round_}.md"
        answers = create_together(workspace, path, racers)
        made = [a for a in answers if a == (f"File created successfully at: {path}", False)]
        assert len(made) == 1, answers
        assert answers.count((f"File {path} already exists", True)) == racers - 1, answers
        assert workspace.get_count() == round_ + 1


def test_a_file_deleted_and_made_again_is_one_file_each_time(workspace):
    memory = WorkspaceMemory(workspace)
    for round_ in range(4):
        create = {"command": "create", "path": "/memories/log.md", "file_text": f"round {round_}"}
        assert memory.run(create) == ("File created successfully at: /memories/log.md", False)
        assert memory.run(create)[1] is True
        assert workspace.get_count() == 1
        memory.execute({"command": "delete", "path": "/memories/log.md"})
        assert workspace.get_count() == 0


def test_a_file_renamed_away_leaves_its_old_path_free_to_create(workspace):
    memory = WorkspaceMemory(workspace)
    memory.execute({"command": "create", "path": "/memories/a.md", "file_text": "a"})
    memory.execute({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b"})
    assert memory.run({"command": "create", "path": "/memories/a.md", "file_text": "again"}) == (
        "File created successfully at: /memories/a.md",
        False,
    )
    assert workspace.get_count() == 2


def test_nfc_and_nfd_spellings_of_a_name_are_one_file(workspace):
    memory = WorkspaceMemory(workspace)
    composed = unicodedata.normalize("NFC", "/memories/café.md")
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    memory.execute({"command": "create", "path": composed, "file_text": "crème\n"})
    assert memory.run({"command": "create", "path": decomposed, "file_text": "x"}) == (
        f"File {decomposed} already exists",
        True,
    )
    assert "\tcrème\n" in memory.execute({"command": "view", "path": decomposed})
    memory.execute({"command": "delete", "path": decomposed})
    assert workspace.get_count() == 0


def test_a_rename_whose_files_would_outgrow_the_path_limit_is_refused(workspace):
    memory = WorkspaceMemory(workspace)
    memory.execute({"command": "create", "path": "/memories/d/deep/file.md", "file_text": "x"})
    long_dir = "/memories/" + "n" * (MAX_PATH_CHARS - len("/memories/"))
    text, is_error = memory.run(
        {"command": "rename", "old_path": "/memories/d", "new_path": long_dir}
    )
    assert is_error and "longer than" in text, text
    assert memory.execute({"command": "view", "path": "/memories/d/deep/file.md"}).endswith("x")
    assert memory.execute({"command": "delete", "path": "/memories/d"})
    assert workspace.get_count() == 0


@pytest.mark.parametrize(
    "command",
    [
        {"command": "insert", "path": "/memories/f.md", "insert_line": 0, "insert_text": 5},
        {"command": "insert", "path": "/memories/f.md", "insert_line": True, "insert_text": "x"},
        {"command": "str_replace", "path": "/memories/f.md", "old_str": None, "new_str": "x"},
        {"command": "str_replace", "path": "/memories/f.md", "old_str": "text", "new_str": 1},
        {"command": "create", "path": "/memories/g.md", "file_text": ["a", "b"]},
        {"command": "view", "path": "/memories/f.md", "view_range": "1,2"},
        {"command": "view", "path": "/memories/f.md", "view_range": [1, "2"]},
        {"command": "rename", "old_path": "/memories/f.md", "new_path": 7},
        {"command": "delete", "path": None},
    ],
)
def test_a_wrong_typed_argument_is_a_tool_error_and_changes_nothing(workspace, command):
    memory = WorkspaceMemory(workspace)
    memory.execute({"command": "create", "path": "/memories/f.md", "file_text": "text\n"})
    text, is_error = memory.run(command)
    assert is_error, text
    assert workspace.get_count() == 1
    assert memory.execute({"command": "view", "path": "/memories/f.md"}).endswith(
        "\ttext\n     2\t"
    )


def test_an_unreachable_service_is_a_tool_error():
    """A port on loopback bound by nobody who listens: the connection is refused."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        with Client(f"http://127.0.0.1:{port}", timeout=5.0) as client:
            memory = WorkspaceMemory(client.workspace("notes", "token"))
            for command in (
                {"command": "view", "path": "/memories"},
                {"command": "create", "path": "/memories/a.md", "file_text": "a"},
            ):
                text, is_error = memory.run(command)
                assert is_error and "could not reach the memory service" in text, text


class BadGateway(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.send_response(502)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"bad gateway")

    def log_message(self, *args):
        pass


def test_a_front_that_answers_5xx_is_a_tool_error():
    """A proxy in front of the service that answers 502 (not the service's error body)."""
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), BadGateway) as front:
        threading.Thread(target=front.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{front.server_address[1]}"
            with Client(url, overload_retries=0) as client:
                memory = WorkspaceMemory(client.workspace("notes", "token"))
                text, is_error = memory.run({"command": "view", "path": "/memories"})
                assert is_error and "front_end_error" in text, text
        finally:
            front.shutdown()


def test_a_service_that_never_answers_is_a_tool_error():
    """A loopback port that accepts connections and never answers: the client's timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        with Client(f"http://127.0.0.1:{port}", timeout=0.2) as client:
            memory = WorkspaceMemory(client.workspace("notes", "token"))
            text, is_error = memory.run({"command": "view", "path": "/memories"})
            assert is_error and "could not reach the memory service" in text, text
