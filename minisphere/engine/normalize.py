"""Normalization of content (for exact dedup), tags and ids."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid

from minisphere.engine.constants import ID_PATTERN, MAX_TAG_CHARS
from minisphere.errors import InvalidArgument

_WHITESPACE = re.compile(r"\s+")
_UUID = re.compile(ID_PATTERN)  # the published schema states the same pattern
# Tags the engine manages itself; callers may not set them.
SYSTEM_TAG_PREFIXES = ("stale:",)


def normalize_content(text: str) -> str:
    """Canonical form used for exact dedup: NFKC, case-folded, whitespace collapsed, trimmed.

    Two captures that differ only in case, Unicode compatibility form or spacing are the same
    fact; anything else (punctuation, digits, word order) is a different one.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    # casefold can produce sequences that NFKC would compose differently; normalize once more
    folded = unicodedata.normalize("NFKC", folded)
    return _WHITESPACE.sub(" ", folded).strip()


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_content(text).encode("utf-8")).hexdigest()


def normalize_tag(raw: str) -> str:
    """Lower-case, NFKC, inner whitespace runs become '-', control characters refused."""
    tag = unicodedata.normalize("NFKC", raw).strip().lower()
    tag = _WHITESPACE.sub("-", tag)
    if not tag:
        raise InvalidArgument("tags must not be empty or whitespace")
    if any(unicodedata.category(ch).startswith("C") for ch in tag):
        raise InvalidArgument(f"tag {raw!r} contains control or unassigned characters")
    if len(tag) > MAX_TAG_CHARS:
        raise InvalidArgument(
            f"tag {tag[:20]!r}… is {len(tag)} chars; the limit is {MAX_TAG_CHARS}"
        )
    return tag


def normalize_tags(raw_tags: list[str], *, allow_system: bool = False) -> list[str]:
    tags: list[str] = []
    for raw in raw_tags:
        tag = normalize_tag(raw)
        if not allow_system and tag.startswith(SYSTEM_TAG_PREFIXES):
            raise InvalidArgument(f"tag {tag!r} is reserved for the engine (staleness markers)")
        if tag not in tags:
            tags.append(tag)
    return tags


def new_id() -> str:
    return str(uuid.uuid4())


def check_id(value: str, field: str = "id") -> str:
    if not isinstance(value, str) or not _UUID.fullmatch(value):  # `$` alone admits a final "\n"
        raise InvalidArgument(
            f"{field} must be a lower-case UUID like "
            f"'123e4567-e89b-42d3-a456-426614174000', got {str(value)[:60]!r}"
        )
    return value
