"""A backend for Anthropic's memory tool (`memory_20250818`) that keeps the files in a
workspace.

The model asks for file operations on paths under `/memories` (`view`, `create`,
`str_replace`, `insert`, `delete`, `rename`); the application executes them. Here each file is
one entry of the workspace, written through a workspace handle (`Client.workspace(...)`):

- the entry's content is the file's path and a digest of it on the first line, then the file's
  text; its tags are the tool's own index (`memory_files.py`): a path is found by its exact
  tag, never by scanning the newest entries, and ordinary captures, however tagged, are never
  taken for files;
- creating a path claims it (an idempotency key of the path): two creates of one path at the
  same moment make one file, and the other is told it exists;
- every edit is an `update`, so the workspace keeps each earlier text as a revision; a rename
  makes the file anew at its new path and forgets the old entry; `delete` is `forget` of every
  entry of the path, permanent.

Answers and refusals use the tool's own texts, so a model trained on the tool reads them as it
expects. Paths that leave `/memories` (`..`, another root, a percent-encoded or backslash
variant, control characters) are refused before anything is sent; paths are compared in NFC.
`run` never raises: wrong-typed arguments, the service's refusals and a service that cannot be
reached are all answered as the tool's errors (`is_error`), so the caller's loop goes on.

    memory = WorkspaceMemory(Client(url).workspace("notes", token))
    text, is_error = memory.run(tool_use.input)     # the tool_result's content and is_error
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from minisphere.client.exchange import ServiceError
from minisphere.integrations.memory_files import (
    FILES_TAG,
    MAX_FILES,
    MAX_PATH_CHARS,
    ROOT,
    File,
    MemoryToolError,
    WorkspaceFiles,
    memory_key,
)

__all__ = [
    "FILES_TAG",
    "MAX_PATH_CHARS",
    "TOOL_DEFINITION",
    "MemoryToolError",
    "WorkspaceMemory",
    "memory_key",
]

log = logging.getLogger(__name__)

TOOL_DEFINITION = {"type": "memory_20250818", "name": "memory"}
LINE_NUMBER_WIDTH = 6
LISTING_DEPTH = 2
SNIPPET_CONTEXT_LINES = 2
# what each command's arguments must be (paths are checked by memory_key, with its own texts)
ARGUMENT_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "create": {"file_text": (str,)},
    "str_replace": {"old_str": (str,), "new_str": (str,)},
    "insert": {"insert_line": (int,), "insert_text": (str,)},
    "view": {"view_range": (list, type(None))},
}
# a service that cannot be reached: the tool answers an error, the caller's loop goes on
UNREACHABLE = (httpx.TransportError, OSError)


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


def _check_types(name: str, arguments: dict[str, Any]) -> None:
    """A wrong-typed argument (a model may send a number where text goes) as the tool's error."""
    for argument, types in ARGUMENT_TYPES.get(name, {}).items():
        if argument not in arguments:
            continue  # a missing one is refused by the call itself
        value = arguments[argument]
        if isinstance(value, bool) or not isinstance(value, types):
            raise MemoryToolError(
                f"Invalid arguments for {name}: `{argument}` must be "
                f"{' or '.join('null' if t is type(None) else t.__name__ for t in types)}, "
                f"got {type(value).__name__}"
            )
    view_range = arguments.get("view_range") if name == "view" else None
    if view_range and (
        len(view_range) != 2
        or any(isinstance(n, bool) or not isinstance(n, int) for n in view_range)
    ):
        raise MemoryToolError(
            f"Invalid `view_range` parameter: {view_range}. It should be a list of two integers."
        )


class WorkspaceMemory:
    """The memory tool's commands on a workspace (a sync workspace handle)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.files = WorkspaceFiles(handle)

    # ---- the tool ---------------------------------------------------------------------------
    def run(self, command: dict[str, Any]) -> tuple[str, bool]:
        """(the tool result's text, is_error) of one command; never raises."""
        try:
            return self.execute(command), False
        except MemoryToolError as exc:
            return str(exc), True
        except UNREACHABLE as exc:
            return f"The memory tool could not reach the memory service: {exc!r}", True
        except Exception as exc:  # a defect here must not end the caller's agent loop
            name = command.get("command") if isinstance(command, dict) else None
            log.exception("memory tool command %.40r failed", name)  # never the file's text
            return f"The memory tool failed: {exc!r}", True

    def execute(self, command: dict[str, Any]) -> str:
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
        if action is None or not isinstance(name, str):
            raise MemoryToolError(f"Unknown command: {name}")
        arguments = {k: v for k, v in command.items() if k != "command"}
        _check_types(name, arguments)
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
        key = memory_key(path)
        entry_ids = self.files.entries(key)
        if entry_ids:
            lines = self.files.text(entry_ids[-1]).split("\n")
            start, end = 0, len(lines)
            if view_range:
                start = max(1, view_range[0]) - 1
                end = len(lines) if view_range[1] == -1 else view_range[1]
            return f"Here's the content of {path} with line numbers:\n" + _numbered(
                lines[start:end], start + 1
            )
        files, _ = self.files.all()
        if not self._is_dir(key, files):
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        return self._listing(path, key, files)

    def create(self, path: str, file_text: str) -> str:
        key = memory_key(path)
        files, full = self.files.all()
        if self.files.entries(key) or self._is_dir(key, files):
            raise MemoryToolError(f"File {path} already exists")
        self._check_parents(key, files)
        if full:  # one page of files: the oldest may lie beyond it
            raise MemoryToolError(
                f"Cannot create {path}: the memory holds {MAX_FILES} files, "
                "the most it keeps; delete one first"
            )
        if not self.files.create(key, file_text):
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
        self.files.write(entry_id, key, new_text)
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
        if not 0 <= insert_line <= len(lines):
            raise MemoryToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should "
                f"be within the range [0, {len(lines)}]."
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        new_text = "\n".join(lines)
        self.files.write(entry_id, key, new_text if new_text.endswith("\n") else new_text + "\n")
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        key = memory_key(path)
        if key == ROOT:
            raise MemoryToolError("Cannot delete the /memories directory itself")
        deleted = False
        while entry_ids := self.files.entries(key):  # every entry of the path, however many
            self.files.forget(entry_ids)
            deleted = True
        while True:  # forgetting brings older files into a full listing's view
            files, _ = self.files.all()
            doomed = [f for k, f in files.items() if k.startswith(key + "/")]
            if not doomed:
                break
            for file in doomed:
                self.files.forget(file.entry_ids)
            deleted = True
        if not deleted:
            raise MemoryToolError(f"The path {path} does not exist")
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        old, new = memory_key(old_path), memory_key(new_path)
        if old == ROOT:
            raise MemoryToolError("Cannot rename the /memories directory itself")
        files, _ = self.files.all()
        if self.files.entries(new) or self._is_dir(new, files):
            raise MemoryToolError(f"The destination {new_path} already exists")
        moving = {k: f.entry_ids for k, f in files.items() if k.startswith(old + "/")}
        if old_ids := self.files.entries(old):
            moving[old] = old_ids
        if not moving:
            raise MemoryToolError(f"The path {old_path} does not exist")
        if new.startswith(old + "/"):
            raise MemoryToolError(f"Cannot move {old_path} into itself")
        self._check_parents(new, files)
        longest = max(sorted(new + k[len(old) :] for k in moving), key=len)
        if len(longest) > MAX_PATH_CHARS:
            raise MemoryToolError(
                f"Cannot rename {old_path} to {new_path}: the path {longest} would be longer "
                f"than {MAX_PATH_CHARS} characters"
            )
        for key, entry_ids in sorted(moving.items()):
            if not self.files.create(new + key[len(old) :], self.files.text(entry_ids[-1])):
                raise MemoryToolError(f"The destination {new_path} already exists")
            self.files.forget(entry_ids)
        return f"Successfully renamed {old_path} to {new_path}"

    # ---- the files in the workspace ------------------------------------------------------
    def _file_text(self, path: str) -> tuple[str, str, str]:
        """(key, entry id, text) of the file at `path`, or the tool's refusal for a missing
        one or a directory."""
        key = memory_key(path)
        entry_ids = self.files.entries(key)
        if not entry_ids:
            if self._is_dir(key, self.files.all()[0]):
                raise MemoryToolError(f"The path {path} is not a file.")
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")
        return key, entry_ids[-1], self.files.text(entry_ids[-1])

    @staticmethod
    def _is_dir(key: str, files: dict[str, File]) -> bool:
        return key == ROOT or any(k.startswith(key + "/") for k in files)

    @staticmethod
    def _check_parents(key: str, files: dict[str, File]) -> None:
        parts = key.split("/")
        for end in range(3, len(parts)):
            parent = "/".join(parts[:end])
            if parent in files:
                raise MemoryToolError(f"Cannot create {key}: {parent} is a file")

    @staticmethod
    def _listing(path: str, key: str, files: dict[str, File]) -> str:
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


def _occurrences(text: str, needle: str) -> Iterator[int]:
    at = text.find(needle)
    while at != -1:
        yield at
        at = text.find(needle, at + 1)
