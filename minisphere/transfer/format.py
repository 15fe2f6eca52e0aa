"""The JSONL export format, version 1: records and their validation (no I/O, no Ray).

Line 1 is a header, then one line per entry (in insertion order, with its tags and revisions),
then one line per edge:

    {"record":"header","format":"minisphere-jsonl","formatVersion":1,"contract":"…",
     "schemaVersion":4,"counts":{"entries":…,"edges":…,"revisions":…,"tags":…},"exportedAt":…}
    {"record":"entry","id":…,"content":…,"source":…,"createdAt":…,"updatedAt":…,
     "recallCount":…,"importance":…,"claimTag":…,"evidenceRef":…,"status":…,"kind":…,
     "volatility":…,"unclassified":false,"staleDueAt":…,"staleSince":…,"staleCheckedAt":…,
     "tags":[…],"revisions":[{"content":…,"at":…,"reason":"append"|"update"}]}
    {"record":"edge","src":…,"dst":…,"type":…,"weight":…,"provenance":…,"metadata":{…}|null,
     "createdAt":…,"updatedAt":…}

Times are epoch milliseconds, exactly as stored. Everything an entry has is in its line, so an
import reproduces the workspace exactly (the content hash and the keyword index are derived).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError
from pydantic.alias_generators import to_camel

from minisphere.engine import constants as C
from minisphere.engine.normalize import check_id, normalize_tags
from minisphere.engine.writes import check_content
from minisphere.errors import ImportFormatError, ImportVersionError, MiniSphereError
from minisphere.wire import ClaimTag, EdgeType, Provenance, RevisionReason
from minisphere.wire import Entry as WireEntry

FORMAT_NAME = "minisphere-jsonl"
FORMAT_VERSION = 1
CONTRACT = "MINI_SPHERE_CONTRACT@0.5"
MAX_LINE_BYTES = 2 * 1024 * 1024  # one entry with many revisions still fits
MAX_REVISIONS_PER_ENTRY = 100_000

# Every integer of the format is at most 2^53: SQLite stores at most 2^63 - 1 (a larger one
# fails deep in the driver) and JSON readers in other languages are exact only up to 2^53.
MAX_EXACT_INT = 2**53
Count = Annotated[StrictInt, Field(ge=0, le=MAX_EXACT_INT)]
EpochMs = Count
Score = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
EdgeWeight = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


class _Record(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class Counts(_Record):
    entries: Count
    edges: Count
    revisions: Count
    tags: Count


class Header(_Record):
    record: Literal["header"]
    format: Literal["minisphere-jsonl"]
    format_version: Count
    contract: StrictStr
    schema_version: Count
    counts: Counts
    exported_at: EpochMs


class Revision(_Record):
    content: StrictStr
    at: EpochMs
    reason: RevisionReason


class EntryRecord(_Record, WireEntry):
    """An entry line: the entry's wire fields (`minisphere.wire.Entry`; a line is parsed JSON,
    so their plain `str` types are as strict as StrictStr here), the ones below held to the
    file's bounds and given the defaults an older or hand-made file relies on, and what only a
    copy of the workspace keeps besides."""

    record: Literal["entry"]
    source: Optional[StrictStr] = None
    created_at: EpochMs
    updated_at: EpochMs
    recall_count: Count = 0
    importance: Score = 0.0
    claim_tag: Optional[ClaimTag] = None
    evidence_ref: Optional[StrictStr] = None
    unclassified: StrictBool = False
    stale_due_at: Optional[EpochMs] = None
    stale_since: Optional[EpochMs] = None
    stale_checked_at: Optional[EpochMs] = None
    tags: Annotated[list[StrictStr], Field(max_length=10 * C.MAX_TAGS_PER_ENTRY)] = []
    revisions: Annotated[list[Revision], Field(max_length=MAX_REVISIONS_PER_ENTRY)] = []


class EdgeRecord(_Record):
    record: Literal["edge"]
    src: StrictStr
    dst: StrictStr
    type: EdgeType
    weight: EdgeWeight
    provenance: Provenance
    metadata: Optional[dict[str, Any]] = None  # open JSON, as a link's metadata
    created_at: EpochMs
    updated_at: EpochMs


Record = Union[EntryRecord, EdgeRecord]


def dumps(record: dict[str, object]) -> str:
    """One JSONL line (no newline): compact, UTF-8 as is, strict JSON."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def metadata_text(metadata: dict[str, Any] | None) -> str | None:
    """Edge metadata as the engine stores it (same encoding as `writes.link`)."""
    if metadata is None:
        return None
    return json.dumps(metadata, ensure_ascii=False, sort_keys=True, allow_nan=False)


def _load(line: str, number: int) -> dict[str, Any]:
    if len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise ImportFormatError(f"line {number}: longer than {MAX_LINE_BYTES} bytes")
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ImportFormatError(f"line {number}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ImportFormatError(f"line {number}: must be a JSON object")
    return data


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in exc.errors()[:3]
    )


def parse_header(line: str) -> Header:
    data = _load(line, 1)
    if data.get("record") != "header" or data.get("format") != FORMAT_NAME:
        raise ImportFormatError(f"line 1: not a {FORMAT_NAME} export (no header line)")
    if data.get("formatVersion") != FORMAT_VERSION:
        raise ImportVersionError(
            f"line 1: export format version {data.get('formatVersion')!r}; "
            f"this build reads version {FORMAT_VERSION}"
        )
    try:
        return Header.model_validate(data)
    except ValidationError as exc:
        raise ImportFormatError(f"line 1: {_describe(exc)}") from None


def parse_record(line: str, number: int) -> Record:
    """A validated entry or edge record; ImportFormatError names the line otherwise."""
    data = _load(line, number)
    kind = data.get("record")
    models: dict[str, type[EntryRecord] | type[EdgeRecord]] = {
        "entry": EntryRecord,
        "edge": EdgeRecord,
    }
    model = models.get(kind) if isinstance(kind, str) else None  # a list is no key
    if model is None:
        raise ImportFormatError(f"line {number}: unknown record type {kind!r}")
    try:
        record = model.model_validate(data)
        if isinstance(record, EntryRecord):
            check_id(record.id)
            check_content(record.content)
            normalize_tags(record.tags, allow_system=True)
            for revision in record.revisions:
                check_content(revision.content, "revision content")
        else:
            check_id(record.src, "src")
            check_id(record.dst, "dst")
            metadata_text(record.metadata)
    except ValidationError as exc:
        raise ImportFormatError(f"line {number}: {_describe(exc)}") from None
    except (ValueError, TypeError) as exc:
        raise ImportFormatError(f"line {number}: {exc}") from None
    except ImportFormatError:
        raise
    except MiniSphereError as exc:  # engine validation errors (InvalidArgument, ContentTooLarge)
        message = getattr(exc, "message", str(exc))
        raise ImportFormatError(f"line {number}: {message}") from None
    return record
