"""Leave-one-conversation-out evaluation of recall's settings on a LoCoMo-layout split.

Why: a setting chosen on every dev conversation at once fits those conversations (the last
release's fusion gained on the five dev conversations and lost on five unseen ones). Here each
candidate value of a setting is chosen on four conversations and scored on the fifth, all five
in turn; a setting is worth shipping only if the mean over the held-out folds improves.

    bench = ConversationBench(data, provider)      # captures each conversation once
    per_question = bench.evaluate({"GRAPH_SUPPORT_MAX": 0.4}, bound=False)
    folds = leave_one_out(bench, SETTINGS["GRAPH_SUPPORT_MAX"], bound=False)

A setting is a dict {tuning constant: value}; it is applied by setting the attributes of
`minisphere.engine.retrieval.tuning` for the run and restored afterwards (every stage reads
its constants through the module at call time).
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.workspace import Workspace

from . import locomo

# What a fold's training conversations choose by: the mean of R@10 and nDCG@10 over their
# questions (R@10 alone ties often; nDCG alone ignores a second evidence turn found at rank 9).
SELECTION_WEIGHTS = {"ndcg": 0.5, "recall": 0.5}


@dataclass
class Outcome:
    conversation: str
    category: str
    ndcg: float
    recall: float


@contextlib.contextmanager
def applied(setting: dict):
    """The tuning constants set to `setting` for the block, restored after (even on error)."""
    saved = {name: getattr(T, name) for name in setting}
    try:
        for name, value in setting.items():
            setattr(T, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(T, name, value)


class ConversationBench:
    """Every conversation captured once (zero-binding unless `zero` is False, and bound when a
    provider is given); settings are then evaluated on the same files."""

    def __init__(self, data: locomo.ConversationSet, provider=None, zero: bool = True):
        self.data = data
        self._tmp = tempfile.TemporaryDirectory()
        self.runs: dict[bool, list[tuple[str, Workspace, list]]] = {False: [], True: []}
        self._done: dict[tuple, list[Outcome]] = {}
        kinds = ((False,) if zero else ()) + ((True,) if provider is not None else ())
        for conversation in data.conversations:
            for bound in kinds:
                name = f"{conversation.id}{'-bound' if bound else ''}.db"
                ws = Workspace(
                    Path(self._tmp.name) / name,
                    synchronous="NORMAL",
                    embedder=provider if bound else None,
                )
                info = locomo.capture_conversation(ws, conversation)
                questions = [(q, info["turns_of"]) for q in conversation.questions]
                self.runs[bound].append((conversation.id, ws, questions))

    @property
    def conversations(self) -> list[str]:
        return [c.id for c in self.data.conversations]

    def workspaces(self, bound: bool) -> list[tuple[str, Workspace]]:
        return [(cid, ws) for cid, ws, _ in self.runs[bound]]

    def evaluate(self, setting: dict, bound: bool) -> list[Outcome]:
        """Every question of every conversation recalled (topK=10) under `setting` (a setting
        already in force is not run twice)."""
        moved = {k: v for k, v in setting.items() if getattr(T, k) != v}
        key = (bound, tuple(sorted(moved.items())))
        if key not in self._done:
            self._done[key] = self._run(moved, bound)
        return self._done[key]

    def _run(self, setting: dict, bound: bool) -> list[Outcome]:
        out = []
        with applied(setting):
            for cid, ws, questions in self.runs[bound]:
                for question, turns_of in questions:
                    # Every question is asked of the same state: a recall's follow-up write lifts
                    # what it returned (recall factor), so without the reset a question's answer
                    # depends on what the questions before it returned under this very setting,
                    # and two settings differ by that path as well as by themselves (it moved
                    # hybrid-versus-zero fold figures by up to 0.01 on its own).
                    ws.conn.execute("UPDATE entries SET recall_count = 0")
                    ranked = [i["id"] for i in ws.recall(question.text, topK=10)["items"]]
                    turns = locomo.expand(ranked, turns_of)
                    out.append(
                        Outcome(
                            cid,
                            locomo.CATEGORY_NAMES.get(question.category, "?"),
                            locomo.ndcg_at(turns, question.evidence),
                            locomo.recall_at(turns, question.evidence),
                        )
                    )
        return out

    def close(self) -> None:
        for run in self.runs.values():
            for _, ws, _ in run:
                ws.close()
        self._tmp.cleanup()


def mean(outcomes: list[Outcome], field: str) -> float:
    return sum(getattr(o, field) for o in outcomes) / len(outcomes) if outcomes else float("nan")


def objective(outcomes: list[Outcome]) -> float:
    return sum(w * mean(outcomes, f) for f, w in SELECTION_WEIGHTS.items())


def of(outcomes: list[Outcome], conversations) -> list[Outcome]:
    wanted = set(conversations)
    return [o for o in outcomes if o.conversation in wanted]


@dataclass
class Fold:
    held_out: str
    chosen: str  # label of the candidate the other four conversations chose
    ndcg: float  # held-out figures of the chosen candidate
    recall: float
    base_ndcg: float  # held-out figures of the baseline (the first candidate)
    base_recall: float


def leave_one_out(results: dict[str, list[Outcome]], conversations: list[str]) -> list[Fold]:
    """results: candidate label -> outcomes over every conversation (the first label is the
    baseline). For each conversation, the candidate with the best objective on the other four
    is scored on it; ties keep the earlier candidate (the baseline first)."""
    labels = list(results)
    folds = []
    for held in conversations:
        train = [c for c in conversations if c != held]
        chosen = max(
            labels, key=lambda label: (objective(of(results[label], train)), -labels.index(label))
        )
        test, base = of(results[chosen], [held]), of(results[labels[0]], [held])
        folds.append(
            Fold(
                held,
                chosen,
                mean(test, "ndcg"),
                mean(test, "recall"),
                mean(base, "ndcg"),
                mean(base, "recall"),
            )
        )
    return folds


def fold_means(folds: list[Fold]) -> tuple[float, float, float, float]:
    """(nDCG, R@10, baseline nDCG, baseline R@10), each the unweighted mean over the folds."""
    n = len(folds)
    return (
        sum(f.ndcg for f in folds) / n,
        sum(f.recall for f in folds) / n,
        sum(f.base_ndcg for f in folds) / n,
        sum(f.base_recall for f in folds) / n,
    )


def by_category(outcomes: list[Outcome], field: str) -> dict[str, float]:
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(o.category, []).append(o)
    return {c: mean(v, field) for c, v in groups.items()}


# ---- the settings compared by leave-one-conversation-out -----------------------------------------
@dataclass
class Family:
    """One setting and its candidate values; `before` is the value shipped before held-out
    tuning (the baseline every fold is compared with), `bound` whether it acts with a vector binding only."""

    name: str
    before: dict
    candidates: list[dict]
    bound: bool = False

    def labelled(self) -> dict[str, dict]:
        out = {"before: " + _label(self.before): self.before}
        out.update((_label(c), c) for c in self.candidates if c != self.before)
        return out


def _label(setting: dict) -> str:
    return (
        ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in setting.items())
        or "shipped"
    )


def run_family(
    bench: ConversationBench, family: Family
) -> tuple[dict[str, list[Outcome]], list[Fold]]:
    results = {
        label: bench.evaluate(setting, family.bound) for label, setting in family.labelled().items()
    }
    return results, leave_one_out(results, bench.conversations)


# The settings compared: the value shipped before held-out tuning first (every fold's
# baseline), then the candidates; the shipped value is always among them. Each moves one setting around the
# shipped configuration.
FAMILIES = [
    Family(
        "subject factor (rerank)",
        {"SUBJECT_BOOST_MAX": 0.0},
        [{"SUBJECT_BOOST_MAX": v} for v in (0.5, 1.0, 2.0)],
    ),
    # 300 is left out: past a third of MS MARCO's passages, it cost them 0.012 nDCG@10
    Family(
        "brevity (rerank)",
        {"BREVITY_FULL_CHARS": 0},
        [{"BREVITY_FULL_CHARS": v} for v in (100, 200)],
    ),
    Family(
        "stand-ins for unknown words",
        {"RESPELL_UNKNOWN_WORDS": False},
        [{"RESPELL_UNKNOWN_WORDS": True}],
    ),
    Family(
        "tag arm", {"TAG_SUPPORT_WEIGHT": 0.0}, [{"TAG_SUPPORT_WEIGHT": v} for v in (0.1, 0.2, 0.3)]
    ),
    Family("graph seeds", {"GRAPH_SEED_COUNT": 10}, [{"GRAPH_SEED_COUNT": v} for v in (5, 20)]),
    Family(
        "graph support cap",
        {"GRAPH_SUPPORT_MAX": 0.5},
        [{"GRAPH_SUPPORT_MAX": v} for v in (0.3, 0.7)],
    ),
    Family(
        "graph fusion weight",
        {"GRAPH_FUSION_WEIGHT": 1 / 0.6},
        [{"GRAPH_FUSION_WEIGHT": v} for v in (1.2, 2.0)],
    ),
    Family(
        "keyword feedback weight",
        {"FEEDBACK_WEIGHT": 0.1},
        [{"FEEDBACK_WEIGHT": v} for v in (0.0, 0.2)],
    ),
    Family(
        "proximity weight",
        {"PROXIMITY_BOOST_WEIGHT": 0.25},
        [{"PROXIMITY_BOOST_WEIGHT": v} for v in (0.0, 0.5)],
    ),
    Family("common-term ratio", {"COMMON_TERM_DOC_RATIO": 0.35}, [{"COMMON_TERM_DOC_RATIO": 0.2}]),
    # the stricter pairs (0.3, 0.6), (0.4, 0.8) leave nearly every conversation question in lexical
    # order; they cost MS MARCO's hybrid 0.022-0.026 nDCG@10 (its support is 0.36-0.76)
    Family(
        "hybrid: agreement floor (low, high)",
        {"HYBRID_AGREEMENT_LOW": 0.0, "HYBRID_AGREEMENT_HIGH": 0.0},
        [
            {"HYBRID_AGREEMENT_LOW": lo, "HYBRID_AGREEMENT_HIGH": hi}
            for lo, hi in (
                (0.15, 0.3),
                (0.2, 0.35),
                (0.25, 0.35),
                (0.25, 0.4),
                (0.3, 0.6),
                (0.4, 0.8),
            )
        ],
        bound=True,
    ),
    # the candidates that keep both passage sets at or above their better arm (the others are in
    # tuning.py's note)
    Family(
        "hybrid: agreement band (low, trusted dense margin)",
        {"HYBRID_AGREEMENT_LOW": 0.2, "HYBRID_DENSE_MARGIN_TRUSTED": 0.0},
        [
            {"HYBRID_AGREEMENT_LOW": lo, "HYBRID_DENSE_MARGIN_TRUSTED": dm}
            for lo, dm in (
                (0.2, 0.2),
                (0.2, 0.25),
                (0.2, 0.3),
                (0.25, 0.0),
                (0.25, 0.2),
                (0.25, 0.25),
                (0.25, 0.3),
            )
        ],
        bound=True,
    ),
    # a query naming a word too common to search (a speaker) keeps the lexical order
    Family(
        "hybrid: subject-led fusion",
        {"HYBRID_SUBJECT_LEXICAL_LED": False},
        [{"HYBRID_SUBJECT_LEXICAL_LED": True}],
        bound=True,
    ),
    Family(
        "hybrid: brevity (rerank)",
        {"BREVITY_FULL_CHARS": 0},
        [{"BREVITY_FULL_CHARS": v} for v in (100, 200)],
        bound=True,
    ),
    Family(
        "hybrid: tag arm",
        {"TAG_SUPPORT_WEIGHT": 0.0},
        [{"TAG_SUPPORT_WEIGHT": v} for v in (0.1, 0.2, 0.3)],
        bound=True,
    ),
    Family(
        "hybrid: graph follows auto-links",
        {"GRAPH_FOLLOWS_AUTO_LINKS": True},
        [{"GRAPH_FOLLOWS_AUTO_LINKS": False}],
        bound=True,
    ),
    Family(
        "hybrid: margin floor",
        {"HYBRID_LEXICAL_MARGIN_FLOOR": 1 / 3},
        [{"HYBRID_LEXICAL_MARGIN_FLOOR": 0.25}],
        bound=True,
    ),
    Family(
        "hybrid: page cosine weight",
        {"HYBRID_PAGE_COSINE_WEIGHT": 0.0},
        [{"HYBRID_PAGE_COSINE_WEIGHT": v} for v in (0.5, 0.75, 1.0)],
        bound=True,
    ),
    Family(
        "hybrid: lexical-led from share",
        {"HYBRID_LEXICAL_LED_SHARE": 1.0},
        [{"HYBRID_LEXICAL_LED_SHARE": v} for v in (0.9, 0.8)],
        bound=True,
    ),
]


def _shipped(family: Family) -> str:
    current = {k: getattr(T, k) for k in family.before}
    return _label(current)


def settings_rows(bench: ConversationBench) -> tuple[list[list], list[list]]:
    """(per fold rows, summary rows) of every family that this bench can run."""
    fold_rows, summary = [], []
    for family in FAMILIES:
        if family.bound and not bench.runs[True]:
            continue
        _, fs = run_family(bench, family)
        for f in fs:
            fold_rows.append(
                [family.name, f.held_out, f.chosen, f.recall - f.base_recall, f.ndcg - f.base_ndcg]
            )
        n, r, bn, br = fold_means(fs)
        worst = min(min(f.recall - f.base_recall, f.ndcg - f.base_ndcg) for f in fs)
        summary.append(
            [
                family.name,
                "hybrid" if family.bound else "zero-binding",
                _label(family.before),
                _shipped(family),
                r - br,
                n - bn,
                worst,
            ]
        )
    return fold_rows, summary


def fold_rows(bench: ConversationBench) -> list[list]:
    """Zero-binding and (if bound) hybrid R@10 / nDCG@10 of the shipped settings per held-out
    conversation, with the hybrid's gain; then the mean over the folds."""
    zero = bench.evaluate({}, False)
    hybrid = bench.evaluate({}, True) if bench.runs[True] else None
    rows = []
    for cid in [*bench.conversations, "mean over folds"]:
        pick = bench.conversations if cid == "mean over folds" else [cid]
        z = [(mean(of(zero, [c]), "recall"), mean(of(zero, [c]), "ndcg")) for c in pick]
        zr, zn = (sum(v[i] for v in z) / len(z) for i in (0, 1))
        row = [cid, len(of(zero, pick)), zr, zn]
        if hybrid is not None:
            h = [(mean(of(hybrid, [c]), "recall"), mean(of(hybrid, [c]), "ndcg")) for c in pick]
            hr, hn = (sum(v[i] for v in h) / len(h) for i in (0, 1))
            row += [hr, hn, hr - zr, hn - zn]
        rows.append(row)
    return rows


def category_rows(
    bench: ConversationBench, setting: dict | None = None
) -> tuple[list[str], list[list]]:
    """Zero-binding R@10 per category for each held-out conversation, then the fold mean
    (under `setting`, the shipped settings by default)."""
    zero = bench.evaluate(setting or {}, False)
    categories = list(locomo.CATEGORY_NAMES.values())
    rows = []
    per_fold = {cid: by_category(of(zero, [cid]), "recall") for cid in bench.conversations}
    for cid, values in per_fold.items():
        rows.append([cid, *[values.get(c, float("nan")) for c in categories]])
    rows.append(
        [
            "mean over folds",
            *[sum(v.get(c, 0.0) for v in per_fold.values()) / len(per_fold) for c in categories],
        ]
    )
    rows.append(
        [
            "all questions pooled",
            *[by_category(zero, "recall").get(c, float("nan")) for c in categories],
        ]
    )
    return categories, rows
