"""The conversational memory set (LoCoMo layout, see the data README): loading, the capture
protocol, and scoring.

Protocol: one workspace per conversation; every turn captured in order as an `episodic` entry
with source `conversation` and tag `session-<n>`; consecutive turns of one session linked
`follows` from the newer to the older turn (provenance `system`, weight 0.5); every question
recalled with topK=10. R@10 is the share of a question's evidence turns found in the top 10,
averaged over questions; nDCG@10 uses binary gains.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

FOLLOWS_WEIGHT = 0.5
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
CAPTURE_BATCH = 200


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    id: str
    sessions: list[tuple[int, list[tuple[str, str]]]]  # (session number, [(turn id, text)])
    questions: list[Question]

    @property
    def turns(self) -> list[tuple[int, str, str]]:
        return [
            (number, turn_id, text) for number, turns in self.sessions for turn_id, text in turns
        ]


@dataclass
class ConversationSet:
    name: str
    conversations: list[Conversation] = field(default_factory=list)

    @property
    def turn_texts(self) -> list[str]:
        return [text for c in self.conversations for _, _, text in c.turns]

    @property
    def question_texts(self) -> list[str]:
        return [q.text for c in self.conversations for q in c.questions]


def load(path: str | Path) -> ConversationSet:
    """A folder holding conversations.jsonl, or the file itself."""
    root = Path(path)
    file = root / "conversations.jsonl" if root.is_dir() else root
    name = (root if root.is_dir() else root.parent).name
    out = ConversationSet(name)
    with Path(file).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            raw = json.loads(line)
            sessions = [
                (int(s["session"]), [(t["id"], t["text"]) for t in s["turns"]])
                for s in raw["sessions"]
            ]
            questions = [
                Question(q["question"], list(q["evidence"]), int(q["category"]))
                for q in raw["questions"]
                if q.get("evidence")
            ]
            out.conversations.append(Conversation(str(raw["conversation"]), sessions, questions))
    return out


def turn_capture(session: int, text: str) -> dict:
    """The capture of one conversation turn: an episode filed under its session's tag."""
    return {
        "content": text,
        "kind": "episodic",
        "source": "conversation",
        "tags": [f"session-{session}"],
    }


def capture_conversation(ws, conversation: Conversation) -> dict:
    """Capture the turns in order, link consecutive turns; returns
    {"turns_of": entry id -> turn ids, "outcomes": {outcome: count}, "auto_links": n,
     "duplicate_candidates": n, "blocked": [(turn text, matched text, cosine)]}."""
    turns_of: dict[str, list[str]] = {}
    entry_of: dict[str, str] = {}
    outcomes: dict[str, int] = {}
    blocked, auto_links, candidates = [], 0, 0
    flat = conversation.turns
    for start in range(0, len(flat), CAPTURE_BATCH):
        chunk = flat[start : start + CAPTURE_BATCH]
        calls = [("capture", turn_capture(number, text)) for number, _, text in chunk]
        for (_, turn_id, text), (ok, result) in zip(chunk, ws.run_batch(calls)):
            if not ok:
                raise RuntimeError(f"capture of {turn_id} failed: {result}")
            outcome = result["outcome"]
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            entry_id = result.get("id") or result["matchId"]
            if outcome == "blocked" and result.get("semantic"):
                blocked.append((text, result["matchId"], result.get("cosine")))
            auto_links += len(result.get("autoLinked") or [])
            candidates += "duplicateCandidateOf" in result
            entry_of[turn_id] = entry_id
            turns_of.setdefault(entry_id, []).append(turn_id)
    links = []
    for _, turns in conversation.sessions:
        for (older, _), (newer, _) in itertools.pairwise(turns):
            src, dst = entry_of[newer], entry_of[older]
            if src != dst:
                links.append(
                    (
                        "link",
                        {
                            "src": src,
                            "dst": dst,
                            "type": "follows",
                            "provenance": "system",
                            "weight": FOLLOWS_WEIGHT,
                        },
                    )
                )
    for ok, result in ws.run_batch(links):
        if not ok:
            raise RuntimeError(f"follows link failed: {result}")
    if blocked:
        texts = dict(
            ws.conn.execute(
                f"SELECT id, content FROM entries WHERE id IN ({','.join('?' * len(blocked))})",
                [m for _, m, _ in blocked],
            ).fetchall()
        )
        blocked = [(text, texts.get(match, match), cosine) for text, match, cosine in blocked]
    return {
        "turns_of": turns_of,
        "outcomes": outcomes,
        "auto_links": auto_links,
        "duplicate_candidates": candidates,
        "blocked": blocked,
    }


def expand(entry_ids: list[str], turns_of: dict[str, list[str]]) -> list[str]:
    return [turn for entry_id in entry_ids for turn in turns_of.get(entry_id, [])]


def recall_at(ranked: list[str], evidence: list[str], k: int = 10) -> float:
    wanted = set(evidence)
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def ndcg_at(ranked: list[str], evidence: list[str], k: int = 10) -> float:
    wanted = set(evidence)
    dcg = sum(1.0 / math.log2(i + 2) for i, turn in enumerate(ranked[:k]) if turn in wanted)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(wanted))))
    return dcg / idcg if idcg else 0.0
