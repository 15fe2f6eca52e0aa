"""The files of Anthropic's memory tool as entries of a workspace: how a path is spelled, found,
claimed, written and forgotten (the tool's commands and answers are `anthropic_memory.py`).

Each file is one entry whose content is a header line (the path and a digest of it) then the
file's text: recall finds a file by its path's words and its text, and two files never look
like duplicates of each other (the engine compares case-folded text). Two tags index them, each
holding a digest that no tag a person or an agent writes for itself resembles:

- FILES_TAG on every file lists them all (the tool keeps at most MAX_FILES: one `listRecent`
  page);
- the path's own tag (`path_tag`) finds a path's entries exactly, however many other entries
  the workspace holds.

An entry is a file only when its header is its path's: a capture that copies the header and the
tags by hand is a file written by hand, which the workspace's token allows anyway.

Creating a file claims its path with an idempotency key made of the path's digest and a
generation number (`claim_key`): of two creates of one path, the later write meets the first
one's key and is refused, so a path never holds two entries. A key whose file was deleted since
is marked so by the service and passed over for the next generation: a create passes over one
key (one call) per earlier delete or rename away of its path within the service's key-keeping
period, a day. Tags cannot be taken off an entry, so a file never changes path: a rename makes
the file anew at its new path (claimed the same way) and then forgets the old entry, whose
revisions go with it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from minisphere.client.exchange import ServiceError
from minisphere.integrations.handles import call

ROOT = "/memories"
MAX_PATH_CHARS = 200  # the path sits on the entry's first line, never cut
MAX_FILES = 200  # one listRecent page (the contract's listRecentMaxN)
DIGEST_CHARS = 16
KEY_DIGEST_CHARS = 40  # of a path's tag and claim keys: never shared by two paths
FILES_TAG = "memory-tool-files:" + hashlib.sha256(b"memory_20250818").hexdigest()[:DIGEST_CHARS]
PATH_TAG_PREFIX = "memory-tool-path:"
CLAIM_KEY_PREFIX = "memory-tool-create:"
MAX_CLAIM_GENERATIONS = 10_000  # deletes of one path a day before a create gives up
_ENCODED = re.compile(r"%[0-9a-fA-F]{2}")
_KEY_REUSED = "idempotency_key_reused"  # the claim is held by a file at the path
_NOT_FOUND = "not_found"


class MemoryToolError(Exception):
    """A refused command; its message is the tool result's text."""


def _escape_refusal(path: str) -> MemoryToolError:
    return MemoryToolError(f"Path {path} would escape /memories directory")


def memory_key(path: Any) -> str:
    """The canonical form of a path under /memories (NFC, `.` and empty segments dropped), or
    MemoryToolError. Any `..` is refused, as is anything that could be decoded into one."""
    if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
        raise MemoryToolError(f"Path must start with /memories, got: {path}")
    # one spelling per name: the composed and decomposed forms of "é" list identically
    canonical = unicodedata.normalize("NFC", path)
    if (
        len(canonical) > MAX_PATH_CHARS
        or "\\" in canonical
        or _ENCODED.search(canonical)
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in canonical)
    ):
        raise _escape_refusal(path)
    parts = [part for part in canonical[len(ROOT) :].split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _escape_refusal(path)
    return "/".join([ROOT, *parts])


def _digest(key: str, chars: int = DIGEST_CHARS) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:chars]


def header(key: str) -> str:
    return f"{key}\t{_digest(key)}"


def path_tag(key: str) -> str:
    return PATH_TAG_PREFIX + _digest(key, KEY_DIGEST_CHARS)


def claim_key(key: str, generation: int) -> str:
    return f"{CLAIM_KEY_PREFIX}{_digest(key, KEY_DIGEST_CHARS)}:{generation}"


def _split(content: str) -> tuple[str | None, str]:
    """(the file's key, its text) of an entry's content; no key when it is no file's entry."""
    first, _, text = content.partition("\n")
    key, _, digest = first.rpartition("\t")
    return (key if key and digest == _digest(key) else None), text


def _claim_forgotten(exc: ServiceError) -> bool:
    """The service's answer to a key whose write was forgotten since (the same code as an
    unknown workspace's, which must end the search instead)."""
    return exc.code == _NOT_FOUND and "forgotten" in exc.message


@dataclass
class File:
    entry_ids: list[str]  # newest first; more than one only when written by hand
    size: int  # UTF-8 bytes of the text


class WorkspaceFiles:
    """The tool's files in a workspace, through a sync workspace handle."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def _call(self, method: str, arguments: dict[str, Any], key: str | None = None) -> Any:
        options = {} if key is None else {"idempotency_key": key}
        return call(self.handle, "call_tool", method, arguments, **options)

    def entries(self, key: str) -> list[str]:
        """The ids of the path's entries, newest first: found by the path's own tag."""
        listed = self._call("listRecent", {"tag": path_tag(key), "n": MAX_FILES})
        # a file's header is on its first line, whole in any listing
        return [item["id"] for item in listed["items"] if _split(item["content"])[0] == key]

    def all(self) -> tuple[dict[str, File], bool]:
        """Every file by key, and whether the listing was one full page (the oldest files may
        lie beyond it)."""
        listed = self._call("listRecent", {"tag": FILES_TAG, "n": MAX_FILES})
        files: dict[str, File] = {}
        for item in listed["items"]:
            key, text = _split(item["content"])
            if key is None:
                continue  # carries the tag and is no file: written by hand
            if key in files:
                files[key].entry_ids.append(item["id"])
                continue
            if item.get("truncated"):
                text = self.text(item["id"])
            files[key] = File([item["id"]], len(text.encode("utf-8")))
        return files, len(listed["items"]) >= MAX_FILES

    def text(self, entry_id: str) -> str:
        return _split(self._call("getEntry", {"id": entry_id})["content"])[1]

    def create(self, key: str, text: str) -> bool:
        """Make the file at `key` unless the path holds one; whether it was made (a repeat of
        an identical create that was made is answered as made)."""
        capture = {
            "content": f"{header(key)}\n{text}",
            "tags": [FILES_TAG, path_tag(key)],
            "kind": "semantic",
            "volatility": "durable",
        }
        for generation in range(MAX_CLAIM_GENERATIONS):
            try:
                answer = self._call("capture", capture, claim_key(key, generation))
            except ServiceError as exc:
                if _claim_forgotten(exc):
                    continue
                if exc.code == _KEY_REUSED:
                    return False
                raise
            # `blocked`: an entry holds this very header and text already
            return bool(answer.get("outcome") == "stored")
        raise MemoryToolError(f"Cannot create {key}: it was deleted too often today")

    def write(self, entry_id: str, key: str, text: str) -> None:
        """The file's entry now holds `text` (its old content becomes a revision)."""
        self._call("update", {"id": entry_id, "content": f"{header(key)}\n{text}"})

    def forget(self, entry_ids: list[str]) -> None:
        for entry_id in entry_ids:
            try:
                self._call("forget", {"id": entry_id})
            except ServiceError as exc:
                if exc.code != _NOT_FOUND:  # else forgotten by a delete at the same time
                    raise
