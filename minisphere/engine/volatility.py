"""Infer an entry's volatility class from its content when the caller did not give one.

A documented, deterministic regex heuristic (MINI_SPHERE_CONTRACT §7). Rules are tried in order;
the first that matches wins; nothing matching means `durable`.

| class     | signals                                                                          |
|-----------|----------------------------------------------------------------------------------|
| volatile  | right now / at the moment / today / tonight / this morning|afternoon|evening,     |
|           | currently running|down|failing|blocked, prices ($12, 30 EUR, USD), percentages   |
|           | of live metrics, "in progress", "ETA", "waiting for"                             |
| state     | currently / as of / this week|month|quarter|sprint / latest / status / version    |
|           | numbers (v1.2, 3.4.1) / "is now" / "for now" / "still" / deadlines / "until"     |
| durable   | definitions, decisions, rules, names, anything else                              |
"""

from __future__ import annotations

import re

_VOLATILE = re.compile(
    r"\b(right now|at the moment|today|tonight|this (morning|afternoon|evening)|"
    r"currently (running|down|failing|blocked|broken|deploying|open)|in progress|eta|"
    r"waiting (for|on))\b"
    r"|[$€£]\s?\d|\b\d+(\.\d+)?\s?(usd|eur|gbp)\b",
    re.IGNORECASE,
)
_STATE = re.compile(
    r"\b(currently|as of|this (week|month|quarter|sprint|year)|latest|status|is now|for now|"
    r"still|deadline|due (on|by)|until|at present|nowadays|temporar(y|ily))\b"
    r"|\bv?\d+\.\d+(\.\d+)?\b",
    re.IGNORECASE,
)


def infer_volatility(content: str) -> str:
    if _VOLATILE.search(content):
        return "volatile"
    if _STATE.search(content):
        return "state"
    return "durable"
