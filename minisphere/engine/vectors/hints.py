"""Supersession hints: does a new capture restate an earlier entry with one detail changed?

A hint is the binding's guess that the new entry replaces a neighbour ("Alice lives in Lisbon"
then "Alice lives in Denver"). It is only ever a hint: the agent confirms it with a `supersedes`
link or dismisses it; the engine never rewrites or demotes anything on its strength.

Two texts are a restatement with a changed detail when, word by word (lower-cased tokens aligned
by longest common runs):
  - most of their words agree (the aligned share, 2 × matched / (len a + len b), is at least
    `min_overlap`);
  - what differs holds a *detail* on both sides — a number, date or time (a token with a digit),
    a name (a capitalised word that does not open a sentence) — or a negation word on one side
    only ("not", "never", "no", "…n't");
  - every other changed word is a stop word or the same word in another form: a changed
    ordinary word makes another statement;
  - the subject stays: the texts agree on their first two content words (one, when what changed
    is a number, date or time) before they differ. English names what a sentence is about
    first and what is said of it next, so "Alice lives in Lisbon" then "Bruno lives in Lisbon"
    (another subject), or "Project Fjord has a new lead: Nadia" then "Project Iris has a new
    lead: Nadia", is no hint, while "Alice lives in Denver" is.
Why words and not the cosine alone: a changed date, name or negation barely moves a sentence
embedding, and two subjects stated alike ("X lives in Lisbon", "Y lives in Lisbon") sit closer
than one subject stated twice in other words. The cosine only picks which neighbours to look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher

from minisphere.engine.retrieval.query_text import STOP_WORDS, stem
from minisphere.wire.answers import SupersessionHint

HINT_COSINE = 0.7  # neighbours at least this close are compared word by word
HINT_MIN_OVERLAP = 0.6  # share of aligned words, at least
SUBJECT_MIN_WORDS = 2  # content words the texts agree on before their first difference
HINT_MAX_CHARS = 600  # longer texts are notes, not single facts: never compared
NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "cannot", "neither"})
_WORD = re.compile(r"[^\s]+")
_EDGE_PUNCTUATION = "\"'()[]{}<>.,;:!?«»“”`*\u2018"
_CURLY_APOSTROPHE = "\u2019"
_SENTENCE_END = (".", "!", "?")


@dataclass(frozen=True)
class Token:
    text: str  # lower-cased, edge punctuation and a possessive 's stripped
    detail: bool  # a number, date, time or name
    negation: bool


@dataclass(frozen=True)
class Restatement:
    """How a new text restates an earlier one: what changed, and how much agrees."""

    overlap: float
    before: tuple[str, ...]  # the earlier text's changed details (and negation, if it went)
    after: tuple[str, ...]  # the new text's (and negation, if it came)


def tokens(text: str) -> list[Token]:
    found: list[Token] = []
    opens_sentence = True
    for raw in _WORD.findall(text.replace(_CURLY_APOSTROPHE, "'")):
        word = raw.strip(_EDGE_PUNCTUATION)
        if word.endswith("'s"):
            word = word[:-2]
        if word:
            lower = word.lower()
            negation = lower in NEGATIONS or lower.endswith("n't")
            name = word[0].isupper() and not opens_sentence
            found.append(Token(lower, name or any(ch.isdigit() for ch in word), negation))
        opens_sentence = raw.endswith(_SENTENCE_END) or (opens_sentence and not word)
    return found


def _content(token: Token) -> bool:
    return token.text not in STOP_WORDS and not token.negation


def compare(earlier: str, new: str, min_overlap: float = HINT_MIN_OVERLAP) -> Restatement | None:
    """The restatement `new` makes of `earlier`, or None when it is not one (module doc)."""
    if len(earlier) > HINT_MAX_CHARS or len(new) > HINT_MAX_CHARS:
        return None
    old, now = tokens(earlier), tokens(new)
    if not old or not now:
        return None
    matcher = SequenceMatcher(None, [t.text for t in old], [t.text for t in now], autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    overlap = 2 * matched / (len(old) + len(now))
    if overlap < min_overlap:
        return None
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not changes:
        return None
    gone = [old[i] for _, i1, i2, _, _ in changes for i in range(i1, i2)]
    came = [now[j] for _, _, _, j1, j2 in changes for j in range(j1, j2)]
    if not _subject_kept(old, changes[0][1], gone):
        return None
    if _words(gone) != _words(came):
        return None  # another word changed too: another statement, not this one updated
    negated = any(t.negation for t in gone) != any(t.negation for t in came)
    before = tuple(t.text for t in gone if t.detail)
    after = tuple(t.text for t in came if t.detail)
    if not negated and not (before and after):
        return None
    if negated:  # the negation is the change: say it
        before += tuple(t.text for t in gone if t.negation)
        after += tuple(t.text for t in came if t.negation)
    return Restatement(round(overlap, 6), before, after)


def _words(changed: list[Token]) -> set[str]:
    """The stems of the changed words that are neither details nor stop words: equal on both
    sides when only the form changed ("deploys" to "does not deploy")."""
    return {stem(t.text) for t in changed if _content(t) and not t.detail}


def _subject_kept(old: list[Token], first_change: int, gone: Iterable[Token]) -> bool:
    """The texts agree on how the earlier one begins: at least its first two content words
    (what it is about, and what is said of it) come before the first change; one is enough when
    every changed detail is a number, date or time (values, rarely what a sentence is about)."""
    opening = sum(1 for t in old[:first_change] if _content(t))
    numeric = all(any(ch.isdigit() for ch in t.text) for t in gone if t.detail)
    return opening >= SUBJECT_MIN_WORDS or (numeric and opening >= 1)


def find(
    close: list[tuple[str, float, str, int]], content: str, min_overlap: float
) -> SupersessionHint | None:
    """Among the close neighbours (id, cosine, content, seq), the newest that `content`
    restates with a detail changed: a chain of values is answered its latest."""
    found: tuple[int, SupersessionHint] | None = None
    for entry_id, similarity, other, seq in close:
        if found is not None and seq < found[0]:
            continue
        restated = compare(other, content, min_overlap)
        if restated is not None:
            hint: SupersessionHint = {
                "id": entry_id,
                "cosine": round(similarity, 6),
                "before": list(restated.before),
                "after": list(restated.after),
            }
            found = (seq, hint)
    return found[1] if found is not None else None
