"""Snippet budget: the first SNIPPET_TOP_COUNT results up to SNIPPET_TOP_CHARS characters, the
rest up to SNIPPET_TAIL_CHARS, and no more than SNIPPET_TOTAL_CHARS of content over the whole
response. A cut keeps the head of the text and appends
`[truncated · N chars · get("<id>")]`, N being the number of characters left out (the marker
itself is not counted against the budget). `full` bypasses all of it."""

from __future__ import annotations

from minisphere.engine.retrieval import tuning as T
from minisphere.wire.recall_answer import RecallItem


def truncation_marker(omitted_chars: int, entry_id: str) -> str:
    return f'[truncated · {omitted_chars} chars · get("{entry_id}")]'


def apply_budget(items: list[RecallItem], full: bool) -> None:
    """Cut each item's `content` in place (its `contentChars` is the whole length, when only a
    prefix was read); sets `truncated`."""
    remaining = T.SNIPPET_TOTAL_CHARS
    for position, item in enumerate(items):
        text = item["content"]
        whole = item["contentChars"]
        if full:
            continue
        cap = T.SNIPPET_TOP_CHARS if position < T.SNIPPET_TOP_COUNT else T.SNIPPET_TAIL_CHARS
        allowed = max(0, min(cap, remaining))
        if whole > allowed:
            head = text[:allowed].rstrip()
            item["content"] = (head + " " if head else "") + truncation_marker(
                whole - len(head), item["id"]
            )
            item["truncated"] = True
            remaining -= len(head)
        else:
            remaining -= len(text)
