"""The Anthropic memory tool's backend (`minisphere.integrations.anthropic_memory`) against a
plain in-memory file tree: random sequences of the tool's commands, run on both, answer the
same texts and the same errors, and leave the same files. The workspace is real (engine files
behind the real app, reached by the HTTP client); the tree below is written from the tool's
documented behaviour, independently of the backend. Paths that leave /memories are refused;
ordinary captures in between (tagged as people tag notes, some looking like a file's first
line) change nothing the tool answers."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.integrations.anthropic_memory import FILES_TAG, WorkspaceMemory
from tests.integrations.conftest import live_workspace

EXAMPLES = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


class FileTree:
    """The memory directory as a dict: canonical path -> text. Directories are the paths'
    prefixes (an empty one does not exist)."""

    def __init__(self):
        self.files: dict[str, str] = {}

    @staticmethod
    def key(path):
        if not (path == "/memories" or path.startswith("/memories/")):
            raise ValueError(f"Path must start with /memories, got: {path}")
        name = unicodedata.normalize("NFC", path)  # one file per name, however spelled
        decoded = name.lower()
        if (
            "\\" in name
            or (
                "%" in decoded
                and any(code in decoded for code in ("%2e", "%2f", "%5c", "%25", "%00"))
            )
            or any(ord(c) < 32 for c in name)
            or len(name) > 200
        ):
            raise ValueError(f"Path {path} would escape /memories directory")
        parts = [p for p in name.split("/")[2:] if p not in ("", ".")]
        if ".." in parts:
            raise ValueError(f"Path {path} would escape /memories directory")
        return "/".join(["/memories", *parts])

    def is_dir(self, key):
        return key == "/memories" or any(k.startswith(key + "/") for k in self.files)

    def parent_file(self, key):
        parts = key.split("/")
        return next(
            (
                "/".join(parts[:i])
                for i in range(3, len(parts))
                if "/".join(parts[:i]) in self.files
            ),
            None,
        )

    def run(self, command):
        try:
            return getattr(self, command["command"])(
                **{k: v for k, v in command.items() if k != "command"}
            ), False
        except ValueError as exc:
            return str(exc), True

    def view(self, path, view_range=None):
        key = self.key(path)
        if key in self.files:
            lines = self.files[key].split("\n")
            start, end = 0, len(lines)
            if view_range:
                start, end = (
                    max(1, view_range[0]) - 1,
                    (len(lines) if view_range[1] == -1 else view_range[1]),
                )
            body = [f"{n:>6}\t{line}" for n, line in enumerate(lines[start:end], start + 1)]
            return f"Here's the content of {path} with line numbers:\n" + "\n".join(body)
        if not self.is_dir(key):
            raise ValueError(f"The path {path} does not exist. Please provide a valid path.")
        sizes, files = {}, set()
        for k, text in self.files.items():
            if k.startswith(key + "/"):
                rel = tuple(k[len(key) + 1 :].split("/"))
                if any(p.startswith(".") for p in rel[:2]):
                    continue
                files.add(rel)
                for depth in (1, 2):
                    if depth <= len(rel):
                        sizes[rel[:depth]] = sizes.get(rel[:depth], 0) + len(text.encode())
        total = sum(len(t.encode()) for k, t in self.files.items() if k.startswith(key + "/"))
        rows = [f"{size(total)}\t{path}"] + [
            f"{size(sizes[rel])}\t{path}/{'/'.join(rel)}{'' if rel in files else '/'}"
            for rel in sorted(sizes)
        ]
        return "\n".join(
            [
                f"Here're the files and directories up to 2 levels deep in {path}, "
                "excluding hidden items:",
                *rows,
            ]
        )

    def create(self, path, file_text):
        key = self.key(path)
        if key in self.files or self.is_dir(key):
            raise ValueError(f"File {path} already exists")
        if self.parent_file(key):
            raise ValueError(f"Cannot create {key}: {self.parent_file(key)} is a file")
        self.files[key] = file_text
        return f"File created successfully at: {path}"

    def text_of(self, path):
        key = self.key(path)
        if key not in self.files:
            if self.is_dir(key):
                raise ValueError(f"The path {path} is not a file.")
            raise ValueError(f"The path {path} does not exist. Please provide a valid path.")
        return key, self.files[key]

    def str_replace(self, path, old_str, new_str):
        key, text = self.text_of(path)
        starts = [i for i in range(len(text) + 1) if text.startswith(old_str, i)]
        if not starts:
            raise ValueError(
                f"No replacement was performed, old_str `{old_str}` did not "
                f"appear verbatim in {path}."
            )
        if len(starts) > 1:
            lines = ", ".join(str(text[:i].count("\n") + 1) for i in starts)
            raise ValueError(
                f"No replacement was performed. Multiple occurrences of old_str "
                f"`{old_str}` in lines: {lines}. Please ensure it is unique"
            )
        self.files[key] = new = text.replace(old_str, new_str)
        row = text[: starts[0]].count("\n")
        lines = new.split("\n")
        shown = [
            f"{n:>6}\t{lines[n - 1]}"
            for n in range(max(0, row - 2) + 1, min(len(lines), row + 3) + 1)
        ]
        return "\n".join(
            [
                "The memory file has been edited. Here is the snippet showing the "
                "change (with line numbers):",
                *shown,
            ]
        )

    def insert(self, path, insert_line, insert_text):
        key, text = self.text_of(path)
        lines = text.split("\n")
        if lines[-1] == "":
            lines = lines[:-1]
        if not 0 <= insert_line <= len(lines):
            raise ValueError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be "
                f"within the range [0, {len(lines)}]."
            )
        lines[insert_line:insert_line] = [insert_text.rstrip("\n")]
        joined = "\n".join(lines)
        self.files[key] = joined if joined.endswith("\n") else joined + "\n"
        return f"The file {path} has been edited."

    def delete(self, path):
        key = self.key(path)
        if key == "/memories":
            raise ValueError("Cannot delete the /memories directory itself")
        doomed = [k for k in self.files if k == key or k.startswith(key + "/")]
        if not doomed:
            raise ValueError(f"The path {path} does not exist")
        for k in doomed:
            del self.files[k]
        return f"Successfully deleted {path}"

    def rename(self, old_path, new_path):
        old, new = self.key(old_path), self.key(new_path)
        if old == "/memories":
            raise ValueError("Cannot rename the /memories directory itself")
        if new in self.files or self.is_dir(new):
            raise ValueError(f"The destination {new_path} already exists")
        moving = [k for k in self.files if k == old or k.startswith(old + "/")]
        if not moving:
            raise ValueError(f"The path {old_path} does not exist")
        if new.startswith(old + "/"):
            raise ValueError(f"Cannot move {old_path} into itself")
        if self.parent_file(new):
            raise ValueError(f"Cannot create {new}: {self.parent_file(new)} is a file")
        moved = sorted(new + k[len(old) :] for k in moving)
        if max(map(len, moved)) > 200:  # else a moved file could be reached by no command
            longest = max(moved, key=len)
            raise ValueError(
                f"Cannot rename {old_path} to {new_path}: the path {longest} would be longer "
                "than 200 characters"
            )
        for k in moving:
            self.files[new + k[len(old) :]] = self.files.pop(k)
        return f"Successfully renamed {old_path} to {new_path}"


def size(n):
    return f"{n}B" if n < 1024 else f"{n / 1024:.1f}K"


PATHS = [
    "/memories",
    "/memories/",
    "/memories/notes.md",
    "/memories/Notes.md",
    "/memories//notes.md",
    "/memories/d",
    "/memories/d/",
    "/memories/d/x.txt",
    "/memories/d/e/y",
    "/memories/d/e/f/z",
    "/memories/.hidden",
    "/memories/d/./x.txt",
    "/memories/notes.md/inner",
    "/memories/a b",
    "/memories/a  b",
    "/memories/caf\u00e9.md",  # NFC
    "/memories/cafe\u0301.md",  # the same name in NFD
    "/memories/" + "L" * 185,  # a name its directories' files would outgrow
]
TRAVERSALS = [
    "/memories/../etc/passwd",
    "/memories/d/../../x",
    "/etc/passwd",
    "memories/x",
    "/memoriesx/y",
    "/memories/%2e%2e/x",
    "/memories/%2E%2E%2Fx",
    "/memories/..%2fx",
    "/memories/d\\..\\..\\x",
    "/memories/x\x00y",
    "/MEMORIES/x",
    "",
]
TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.just("\n"), max_size=30
)
FRAGMENT = st.sampled_from(["a", "line", "\n", "x\ny", ""]) | TEXT


# what a person or an agent captures beside the tool: its tags normalize to what the tool might
# have used (`memory-file`), its text may look like a file's first line
ORDINARY = st.builds(
    lambda text, tags: {"command": "capture", "content": text, "tags": tags},
    st.sampled_from(
        ["/memories/notes.md\tnotes", "/memories/notes.md\t0123456789abcdef\nx", "a note"]
    )
    | TEXT.filter(str.strip),
    st.lists(st.sampled_from(["memory file", "Memory-File", "memory", "notes"]), max_size=2),
)


def commands():
    path = st.sampled_from(PATHS)
    return st.one_of(
        st.builds(lambda p, t: {"command": "create", "path": p, "file_text": t}, path, TEXT),
        st.builds(
            lambda p, r: {"command": "view", "path": p, **({"view_range": r} if r else {})},
            path,
            st.none() | st.tuples(st.integers(-1, 4), st.integers(-1, 6)).map(list),
        ),
        st.builds(
            lambda p, o, n: {"command": "str_replace", "path": p, "old_str": o, "new_str": n},
            path,
            FRAGMENT,
            FRAGMENT,
        ),
        st.builds(
            lambda p, i, t: {"command": "insert", "path": p, "insert_line": i, "insert_text": t},
            path,
            st.integers(-1, 5),
            TEXT,
        ),
        st.builds(lambda p: {"command": "delete", "path": p}, path),
        st.builds(lambda o, n: {"command": "rename", "old_path": o, "new_path": n}, path, path),
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with live_workspace(tmp_path_factory.mktemp("memory"), seed=False) as live:
        yield live


def fresh_memory(service) -> tuple[WorkspaceMemory, object]:
    created = service.admin.create_workspace()
    ws = service.admin.workspace(created.workspace.id, created.token)
    return WorkspaceMemory(ws), ws


@EXAMPLES
@given(script=st.lists(commands() | ORDINARY, min_size=1, max_size=10))
def test_the_workspace_answers_every_command_as_a_file_tree_does(service, script):
    memory, ws = fresh_memory(service)
    tree = FileTree()
    for command in script:
        if command["command"] == "capture":  # not the tool's: the tree has nothing to do
            ws.capture(command["content"], tags=command["tags"])
            continue
        assert memory.run(command) == tree.run(command), command
    listing = {"command": "view", "path": "/memories"}
    assert memory.run(listing) == tree.run(listing)
    for key in tree.files:
        assert memory.run({"command": "view", "path": key}) == tree.run(
            {"command": "view", "path": key}
        )


@pytest.mark.parametrize("path", TRAVERSALS)
def test_paths_that_leave_memories_are_refused_and_send_nothing(service, path):
    memory, ws = fresh_memory(service)
    for command in (
        {"command": "create", "path": path, "file_text": "x"},
        {"command": "view", "path": path},
        {"command": "rename", "old_path": "/memories/a", "new_path": path},
    ):
        text, is_error = memory.run(command)
        assert is_error and ("escape /memories" in text or "must start with" in text), text
    assert ws.get_count() == 0


def test_each_edit_is_a_revision_a_rename_starts_anew_and_delete_forgets_for_good(service):
    memory, ws = fresh_memory(service)
    memory.execute({"command": "create", "path": "/memories/plan.md", "file_text": "one\n"})
    memory.execute(
        {"command": "str_replace", "path": "/memories/plan.md", "old_str": "one", "new_str": "two"}
    )
    [edited] = ws.list_recent(tag=FILES_TAG)
    assert ws.get_entry(edited.id).model_extra["revisionCount"] == 1
    memory.execute(
        {"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/done/plan.md"}
    )
    [entry] = ws.list_recent(tag=FILES_TAG)
    detail = ws.get_entry(entry.id)
    assert detail.content.startswith("/memories/done/plan.md\t") and detail.content.endswith(
        "\ntwo\n"
    )
    # the old entry went with its revisions (its path's tag cannot be taken off it)
    assert entry.id != edited.id and detail.model_extra["revisionCount"] == 0
    assert ws.get_count() == 1
    memory.execute({"command": "delete", "path": "/memories/done"})
    assert ws.get_count() == 0
    assert memory.run({"command": "view", "path": "/memories/done/plan.md"})[1] is True


@pytest.mark.parametrize("name", [["view"], {"view": 1}, None, 3])
def test_a_command_name_that_is_no_string_is_refused_as_a_tool_error(service, name):
    """A list or an object where the command's name goes (as a model may send) is refused as
    the tool's own error, not raised as a TypeError (a list can be no dictionary key)."""
    memory, ws = fresh_memory(service)
    text, is_error = memory.run({"command": name, "path": "/memories"})
    assert is_error and text.startswith("Unknown command"), text
    assert ws.get_count() == 0
