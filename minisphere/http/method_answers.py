"""Which answer model each workspace method gives: the RPC routes' documented answers and the MCP
tools' output schemas."""
from __future__ import annotations

from pydantic import BaseModel

from minisphere.http.recall_responses import RecallAnswer
from minisphere.http.workspace_responses import (
    BriefAnswer,
    CaptureAnswer,
    ConnectionsAnswer,
    CountAnswer,
    EntryDetail,
    EntryList,
    ForgetAnswer,
    GraphAnswer,
    LinkAnswer,
    StalenessPassAnswer,
    StatsAnswer,
    TagsAnswer,
    UnlinkAnswer,
)

METHOD_ANSWERS: dict[str, type[BaseModel]] = {
    "recall": RecallAnswer, "listRecent": EntryList, "getEntry": EntryDetail,
    "connections": ConnectionsAnswer, "graphView": GraphAnswer, "getTags": TagsAnswer,
    "getCount": CountAnswer, "getStats": StatsAnswer, "getBrief": BriefAnswer,
    "capture": CaptureAnswer, "append": EntryDetail, "update": EntryDetail,
    "setStatus": EntryDetail, "forget": ForgetAnswer, "link": LinkAnswer,
    "unlink": UnlinkAnswer, "runStalenessPass": StalenessPassAnswer,
}
