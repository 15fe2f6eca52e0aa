"""What a model is told about a workspace: the server's instructions (sent at initialize) and
the `use_workspace` prompt, both written from the contract's vocabulary (kinds, volatility,
status, claim tags, staleness)."""

from __future__ import annotations

PROMPT_NAME = "use_workspace"
PROMPT_DESCRIPTION = (
    "How to use this Mini-Sphere workspace as your memory: recall before "
    "answering, capture decisions and facts, say how sure you are."
)

INSTRUCTIONS = (
    "A Mini-Sphere workspace: one agent's long-term memory of entries (facts and events) "
    "linked by typed edges. Call recall before answering anything the memory may know; capture "
    "what is worth keeping; set claimTag to say how sure you are. The use_workspace prompt "
    "explains more."
)


def prompt_text(workspace: str) -> str:
    return f"""You have a long-term memory: the Mini-Sphere workspace `{workspace}`, reached
through its tools. Use it like this.

Before you answer
- Call `recall` with the question in plain words before answering anything the memory may
  know (a name, a decision, a preference, what happened). Read the items' `claimTag` and
  `stale` fields: a stale entry may be out of date, and the answer's `revalidate` list asks a
  question to check it with.
- `getBrief` tells what changed recently and which topics matter; `getEntry` shows one entry
  whole (a listed entry's content may be cut), with its revisions; `connections` and
  `graphView` follow its edges.
- To answer what was true at a past moment ("where did she live in March?"), give `recall`,
  `listRecent` or `getEntry` an `asOf` date-time (`2026-03-15T12:00:00Z`): they answer from
  what the memory held then.

What to keep
- `capture` a decision, a stated fact, a preference or an outcome once it is settled, one
  entry per fact, in words that will make sense without this conversation. Give `kind`
  (`episodic`: something that happened; `semantic`: something true, a rule, a definition),
  `tags` naming the topic, and `volatility` (`durable`, `state` for a status that changes over
  weeks, `volatile` for what changes within a day).
- An exact duplicate is refused with outcome `blocked` and the `matchId` of the entry that
  already holds it: use that entry.
- When a fact changes, `update` the entry (the old words are kept as a revision) or capture the
  new one and `link` it to the old with `supersedes` (src: the new entry, dst: the old one).
  Recall then ranks the old one below the new and marks it `supersededBy` the newest; a link
  that would make a cycle of replacements is refused (`supersession_cycle`). With a vector
  binding, a capture that restates an entry with a detail changed (a date, a number, a name, a
  "not") comes back with `supersessionHint` naming that entry: link `supersedes` if the new one
  replaces it, or `unlink` their `relates_to` edge if not; `getBrief` lists the hints still open
  under `revalidate`. Nothing is replaced until you link it. `setStatus`
  `deprecated` retires an entry without deleting it. `forget` deletes for good: only when asked
  to.

Say how sure you are
- Set `claimTag`: `VERIFIED` for what you checked or were told by the person who knows,
  `INFERRED` for your own conclusion, `UNKNOWN` when you are recording an open question.
  Put what backs the claim in `evidenceRef`.
- Mark a tentative entry `status` `draft` until it is confirmed; never state a guess as fact.

Writes may carry `idempotencyKey`: sending the same write again with the same key is safe
after a timeout. A refused call answers an error with a code (`not_found`, `invalid_argument`,
`insufficient_scope`, ...) and a message that says what to change.
"""
