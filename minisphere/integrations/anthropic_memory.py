"""A backend for Anthropic's memory tool (`memory_20250818`) that keeps the files in a
workspace.

The model asks for file operations on paths under `/memories` (`view`, `create`,
`str_replace`, `insert`, `delete`, `rename`); the application executes them. Here each file is
one entry of the workspace, written through a workspace handle (`Client.workspace(...)`):

- the entry's content is the file's path and a digest of it on the first line, then the file's
  text: recall finds a file by its path's words and its text, and two files never look like
  duplicates of each other (the engine compares case-folded text);
- every entry of a file carries the tag `memory-file`, which lists them all (at most
  MAX_FILES: one `listRecent` page). The path is not a tag of its own: tags are case-folded
  and cannot be removed, so one would go stale at the first rename;
- every change is an `update`, so the workspace keeps each earlier text as a revision (a
  rename too: the first line changes); `delete` is `forget`, permanent.

Answers and refusals use the tool's own texts, so a model trained on the tool reads them as it
expects. Paths that leave `/memories` (`..`, another root, a percent-encoded or backslash
variant, control characters) are refused before anything is sent.

    memory = WorkspaceMemory(Client(url).workspace("notes", token))
    text, is_error = memory.run(tool_use.input)     # the tool_result's content and is_error
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minisphere.client.exchange import ServiceError
from minisphere.integrations.handles import call

TOOL_DEFINITION = {"type": "memory_20250818", "name": "memory"}
ROOT = "/memories"
FILE_TAG = "memory-file"
MAX_FILES = 200  # one listRecent page (the contract's listRecentMaxN)
MAX_PATH_CHARS = 200  # the path sits on the entry's first line, never cut
DIGEST_CHARS = 16
LINE_NUMBER_WIDTH = 6
LISTING_DEPTH = 2
SNIPPET_CONTEXT_LINES = 2
_ENCODED = re.compile(r"%[0-9a-fA-F]{2}")


class MemoryToolError(Exception):
    """A refused command; its message is the tool result's text."""


def _escape_refusal(path: str) -> MemoryToolError:
    return MemoryToolError(f"Path {path} would escape /memories directory")


def memory_key(path: Any) -> str:
    """The canonical form of a path under /memories (`.` and empty segments dropped), or
    MemoryToolError. Any `..` is refused, as is anything that could be decoded into one."""
    if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
        raise MemoryToolError(f"Path must start with /memories, got: {path}")
    if (
        len(path) > MAX_PATH_CHARS
        or "\\" in path
        or _ENCODED.search(path)
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in path)
    ):
        raise _escape_refusal(path)
    parts = [part for part in path[len(ROOT) :].split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _escape_refusal(path)
    return "/".join([ROOT, *parts])


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def _header(key: str) -> str:
    return f"{key}\t{_digest(key)}"


def _human_size(size: float) -> str:
    for unit in ("B", "K"):
        if size < 1024:
            return f"{size}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{size:.1f}M"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(
        f"{str(first + i).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)
    )


@dataclass
class _File:
    entry_id: str
    size: int  # UTF-8 bytes of the text


class WorkspaceMemory:
    """The memory tool's commands on a workspace (a sync workspace handle)."""

    def __init__(self, handle):
        self.handle = handle

    # ---- the tool ---------------------------------------------------------------------------
    def run(self, command: dict) -> tuple[str, bool]:
        """(the tool result's text, is_error) of one command."""
        try:
            return self.execute(command), False
        except MemoryToolError as exc:
            return str(exc), True

    def execute(self, command: dict) -> str:
        """The text of a command's answer; MemoryToolError when it is refused."""
        name = command.get("command") if isinstance(command, dict) else None
        actions: dict[str, Callable[..., str]] = {
            "view": self.view,
            "create": self.create,
            "str_replace": self.str_replace,
            "insert": self.insert,
            "delete": self.delete,
            "rename": self.rename,
        }
        action = actions.get(name) if isinstance(name, str) else None  # a list is no key
        if action is None:
            raise MemoryToolError(f"Unknown command: {name}")
        arguments = {k: v for k, v in command.items() if k != "command"}
        try:
            return action(**arguments)
        except TypeError as exc:
            raise MemoryToolError(f"Invalid arguments for {name}: {exc}") from None
        except ServiceError as exc:
            raise MemoryToolError(
                f"The memory service refused {name}: {exc.code}: {exc.message}"
            ) from None

    # ---- the commands ---------------------------------------------------------------------
    def view(self, path: str, view_range: list[int] | None = None) -> str:
        key, files = memory_key(path), self._files()
        if key in files:
            lines = self._entry_text(files[key].entry_id).split("\n")
            start, end = 0, len(lines)
            if view_range and len(view_range) == 2:
                start = max(1, view_range[0]) - 1
                end = len(lines) if view_range[1] == -1 else view_range[1]
            return f"Here's the content of {path} with line numbers:\n" + _numbered(
                lines[start:end], start + 1
            )
        if not self._is_dir(key, files):
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        return self._listing(path, key, files)

    def create(self, path: str, file_text: str) -> str:
        key, files = memory_key(path), self._files()
        if key in files or self._is_dir(key, files):
            raise MemoryToolError(f"File {path} already exists")
        self._check_parents(key, files)
        if len(files) >= MAX_FILES:
            raise MemoryToolError(
                f"Cannot create {path}: the memory holds {MAX_FILES} files, "
                "the most it keeps; delete one first"
            )
        answer = call(
            self.handle,
            "call_tool",
            "capture",
            {
                "content": f"{_header(key)}\n{file_text}",
                "tags": [FILE_TAG],
                "kind": "semantic",
                "volatility": "durable",
            },
        )
        if answer.get("outcome") != "stored":  # never: the first line is unique
            raise MemoryToolError(f"File {path} already exists")
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        key, entry_id, text = self._file_text(path)
        count = text.count(old_str)
        if count == 0:
            raise MemoryToolError(
                f"No replacement was performed, old_str `{old_str}` did not "
                f"appear verbatim in {path}."
            )
        if count > 1:
            found_at = [text[:at].count("\n") + 1 for at in _occurrences(text, old_str)]
            raise MemoryToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in "
                f"lines: {', '.join(map(str, found_at))}. Please ensure it is unique"
            )
        changed = text[: text.find(old_str)].count("\n")
        new_text = text.replace(old_str, new_str)
        self._write(entry_id, key, new_text)
        lines = new_text.split("\n")
        first = max(0, changed - SNIPPET_CONTEXT_LINES)
        shown = lines[first : changed + SNIPPET_CONTEXT_LINES + 1]
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + _numbered(shown, first + 1)
        )

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        key, entry_id, text = self._file_text(path)
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if not isinstance(insert_line, int) or not 0 <= insert_line <= len(lines):
            raise MemoryToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should "
                f"be within the range [0, {len(lines)}]."
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        new_text = "\n".join(lines)
        self._write(entry_id, key, new_text if new_text.endswith("\n") else new_text + "\n")
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        key, files = memory_key(path), self._files()
        if key == ROOT:
            raise MemoryToolError("Cannot delete the /memories directory itself")
        doomed = [k for k in files if k == key or k.startswith(key + "/")]
        if not doomed:
            raise MemoryToolError(f"The path {path} does not exist")
        for doomed_key in doomed:
            call(self.handle, "call_tool", "forget", {"id": files[doomed_key].entry_id})
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        old, new, files = memory_key(old_path), memory_key(new_path), self._files()
        if old == ROOT:
            raise MemoryToolError("Cannot rename the /memories directory itself")
        if new in files or self._is_dir(new, files):
            raise MemoryToolError(f"The destination {new_path} already exists")
        moving = [k for k in files if k == old or k.startswith(old + "/")]
        if not moving:
            raise MemoryToolError(f"The path {old_path} does not exist")
        if new.startswith(old + "/"):
            raise MemoryToolError(f"Cannot move {old_path} into itself")
        self._check_parents(new, files)
        for key in moving:
            entry_id = files[key].entry_id
            self._write(entry_id, new + key[len(old) :], self._entry_text(entry_id))
        return f"Successfully renamed {old_path} to {new_path}"

    # ---- the files in the workspace ------------------------------------------------------
    def _files(self) -> dict[str, _File]:
        """Every file: its key, entry and size (a cut listing's size from the whole entry)."""
        listed = call(self.handle, "call_tool", "listRecent", {"tag": FILE_TAG, "n": MAX_FILES})
        files = {}
        for item in listed["items"]:
            header, _, text = item["content"].partition("\n")
            key, _, digest = header.rpartition("\t")
            if not key or digest != _digest(key):
                continue  # not a file's entry: someone else's tag
            if item.get("truncated"):
                text = self._entry_text(item["id"])
            files[key] = _File(item["id"], len(text.encode("utf-8")))
        return files

    def _entry_text(self, entry_id: str) -> str:
        content = call(self.handle, "call_tool", "getEntry", {"id": entry_id})["content"]
        return content.partition("\n")[2]

    def _file_text(self, path: str) -> tuple[str, str, str]:
        """(key, entry id, text) of the file at `path`, or the tool's refusal for a missing
        one or a directory."""
        key, files = memory_key(path), self._files()
        if key not in files:
            if self._is_dir(key, files):
                raise MemoryToolError(f"The path {path} is not a file.")
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        return key, files[key].entry_id, self._entry_text(files[key].entry_id)

    def _write(self, entry_id: str, key: str, text: str) -> None:
        """The file's entry now holds `text` at `key` (its old content becomes a revision)."""
        call(
            self.handle,
            "call_tool",
            "update",
            {"id": entry_id, "content": f"{_header(key)}\n{text}"},
        )

    @staticmethod
    def _is_dir(key: str, files: dict) -> bool:
        return key == ROOT or any(k.startswith(key + "/") for k in files)

    @staticmethod
    def _check_parents(key: str, files: dict) -> None:
        parts = key.split("/")
        for end in range(3, len(parts)):
            parent = "/".join(parts[:end])
            if parent in files:
                raise MemoryToolError(f"Cannot create {key}: {parent} is a file")

    @staticmethod
    def _listing(path: str, key: str, files: dict[str, _File]) -> str:
        """The directory's files and directories, two levels deep, hidden ones left out."""
        file_parts: set[tuple[str, ...]] = set()
        sizes: dict[tuple[str, ...], int] = {}
        for file_key, file in files.items():
            if not file_key.startswith(key + "/"):
                continue
            parts = tuple(file_key[len(key) + 1 :].split("/"))
            if any(part.startswith(".") for part in parts[:LISTING_DEPTH]):
                continue
            for depth in range(1, min(len(parts), LISTING_DEPTH) + 1):
                sizes[parts[:depth]] = sizes.get(parts[:depth], 0) + file.size
            file_parts.add(parts)
        total = sum(f.size for k, f in files.items() if k.startswith(key + "/"))
        lines = [f"{_human_size(total)}\t{path}"]
        for parts in sorted(sizes):
            name = "/".join(parts) + ("" if parts in file_parts else "/")
            lines.append(f"{_human_size(sizes[parts])}\t{path}/{name}")
        return (
            f"Here're the files and directories up to 2 levels deep in {path}, excluding "
            "hidden items:\n" + "\n".join(lines)
        )


def _occurrences(text: str, needle: str):
    at = text.find(needle)
    while at != -1:
        yield at
        at = text.find(needle, at + 1)
