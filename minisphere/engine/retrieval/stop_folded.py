"""Query words the stemmer folds onto a stop word: "Ines" -> "in", "Wes" -> "we", "Wills" ->
"will". The index stems entries the same way, so such a word searched as itself matches every
entry holding the stop word, and BM25 weighs it as little as the stop word. Most are names, the
words a question hinges on ("Where does Ines work now?").

Such a word is searched by its letters instead: the entries holding it as a whole word (found
among the stop word's postings, which hold them all), each given the weight BM25 gives one
occurrence of a word held by n of the N entries, FTS5's own idf = ln((N - n + 0.5) / (n + 0.5)).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.query_text import fold, quote

if TYPE_CHECKING:  # pragma: no cover - types only
    from minisphere.engine.db import Connection
    from minisphere.engine.retrieval.sql_filters import Prefilter

IDF_FLOOR = 1e-6  # FTS5's own floor for a word in more than half the entries


def literal_matches(
    conn: Connection, word: str, prefilter: Prefilter, columns: str
) -> dict[str, tuple[float, int, tuple[Any, ...]]]:
    """entry id -> (the word's BM25 weight, seq, `columns`' values) for every entry passing the
    prefilter that holds `word` whole (query_text.stop_folded), up to FOLDED_WORD_MAX_ROWS."""
    where, params = prefilter.sql()
    rows = conn.execute(
        f"SELECT e.id, e.seq, lower(e.content), {columns} FROM entries_fts "
        "JOIN entries e ON e.seq = entries_fts.rowid "
        f"WHERE entries_fts MATCH ? AND instr(lower(e.content), ?) > 0 AND {where} LIMIT ?",
        [quote(word), word, *params, T.FOLDED_WORD_MAX_ROWS],
    ).fetchall()
    whole = re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])")
    held = [r for r in rows if whole.search(fold(r[2]))]
    if not held:
        return {}
    total = max(entry_count(conn), len(held))
    weight = max(math.log((total - len(held) + 0.5) / (len(held) + 0.5)), IDF_FLOOR)
    return {r[0]: (weight, r[1], r[3:]) for r in held}
