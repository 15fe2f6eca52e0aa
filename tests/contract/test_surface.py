"""The machine-readable surface: routes and engine models must agree with it, both directions."""

import copy
import json
import re
import shutil
from typing import get_args

import pytest
from pydantic.alias_generators import to_camel

from minisphere.contract.pins import (
    CONTRACT_NAME,
    ContractSurfaceError,
    check_routes,
    find_contracts_dir,
    load_surface,
    verify_startup,
)
from minisphere.contract.surface import differences
from minisphere.engine import arguments as inputs
from minisphere.engine import constants as C
from minisphere.engine.methods import METHODS
from minisphere.engine.writes import KIND_GATES
from tests.support.contracts import ACTIVE_VERSION, CONTRACT_FILES, SURFACE

READS = {
    "recall",
    "listRecent",
    "getEntry",
    "connections",
    "graphView",
    "getTags",
    "getCount",
    "getStats",
    "getBrief",
}
WRITES = {"capture", "append", "update", "setStatus", "forget", "link", "unlink"}
MAINTENANCE = {"runStalenessPass"}


@pytest.fixture(scope="module")
def surface():
    return json.loads((find_contracts_dir() / SURFACE).read_text(encoding="utf-8"))


def repin(directory, name):
    from minisphere.contract.pins import format_pin, sha256_file

    (directory / f"{name}.sha256").write_text(format_pin(sha256_file(directory / name), name))


def test_surface_lists_exactly_the_contract_methods_by_group(surface):
    groups = {
        g: {m for m, spec in surface["methods"].items() if spec["group"] == g}
        for g in ("read", "write", "maintenance")
    }
    assert groups == {"read": READS, "write": WRITES, "maintenance": MAINTENANCE}


def test_routed_set_equal_to_the_contract_starts(surface):
    records = verify_startup(set(METHODS))
    assert {r["role"] for r in records} == {"text", "surface"}
    assert set(METHODS) == set(surface["methods"])


def test_routed_method_missing_from_contract_refuses():
    with pytest.raises(ContractSurfaceError) as caught:
        verify_startup(set(METHODS) | {"ingestUrl"})
    assert "ingestUrl" in str(caught.value) and "not in the contract" in str(caught.value)
    assert caught.value.code == "contract_surface_mismatch"


def test_contract_method_not_routed_refuses():
    with pytest.raises(ContractSurfaceError) as caught:
        verify_startup(set(METHODS) - {"runStalenessPass"})
    assert "runStalenessPass" in str(caught.value) and "not routed" in str(caught.value)


def test_both_directions_are_reported_together(surface):
    with pytest.raises(ContractSurfaceError) as caught:
        check_routes(surface, (set(METHODS) - {"forget"}) | {"crawl"})
    assert len(caught.value.problems) == 2


def test_engine_agrees_with_the_surface(surface):
    assert differences(surface) == []


def test_engine_models_match_surface_arguments_directly(surface):
    """Independent of the describer: pydantic field names, required-ness and defaults."""
    for name, method in METHODS.items():
        spec = {a["name"]: a for a in surface["methods"][name]["args"]}
        fields = {to_camel(field): info for field, info in method.args.model_fields.items()}
        assert set(spec) == set(fields), name
        for wire, info in fields.items():
            assert spec[wire]["required"] is info.is_required(), (name, wire)
            if not info.is_required():
                assert spec[wire]["default"] == info.default, (name, wire)
        assert surface["methods"][name]["positional"] == list(method.positional), name


def test_enums_match_engine_literals(surface):
    assert surface["enums"] == {
        "status": list(get_args(inputs.Status)),
        "kind": list(get_args(inputs.Kind)),
        "volatility": list(get_args(inputs.Volatility)),
        "provenance": list(get_args(inputs.Provenance)),
        "claimTag": list(get_args(inputs.ClaimTag)),
        "edgeType": list(inputs.EDGE_TYPES),
    }
    assert surface["enums"]["status"] == ["canonical", "draft", "deprecated"]
    assert surface["enums"]["claimTag"] == ["VERIFIED", "INFERRED", "UNKNOWN"]


def test_eight_edge_types_with_kind_gates(surface):
    edges = {e["name"]: e for e in surface["edgeTypes"]}
    assert list(edges) == [
        "relates_to",
        "supersedes",
        "caused_by",
        "decided",
        "about_person",
        "part_of_project",
        "follows",
        "document_of",
    ]
    assert edges["decided"]["kindGate"] == {"src": "episodic", "dst": None}
    assert edges["follows"]["kindGate"] == {"src": "episodic", "dst": "episodic"}
    assert [n for n, e in edges.items() if e["symmetric"]] == ["relates_to"]
    gated = {n for n, e in edges.items() if e["kindGate"] != {"src": None, "dst": None}}
    assert gated == set(KIND_GATES)


def test_limits_match_constants(surface):
    assert surface["limits"]["maxContentBytes"] == C.MAX_CONTENT_BYTES
    assert surface["limits"]["recallMaxTopK"] == C.RECALL_MAX_TOP_K


def test_error_codes_exist_in_the_engine(surface):
    from minisphere import errors

    codes = {
        cls.code
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.MiniSphereError)
    }
    assert set(surface["errors"]) <= codes


def test_contract_text_names_every_surface_method_and_edge_type(surface):
    text = (find_contracts_dir() / surface["text"]).read_text(encoding="utf-8")
    for name in surface["methods"]:
        assert re.search(rf"`{name}\(", text), name
    for edge in surface["edgeTypes"]:
        assert f"`{edge['name']}`" in text, edge["name"]


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda d: d["methods"]["recall"]["args"][1].update(default=5), "recall.topK: default"),
        (lambda d: d["methods"]["capture"]["args"].pop(), "evidenceRef"),
        (lambda d: d["methods"]["link"]["args"][0].update(required=False), "link.src: required"),
        (lambda d: d["enums"]["kind"].append("procedural"), "enum kind"),
        (lambda d: d["edgeTypes"][3]["kindGate"].update(src=None), "edge type decided"),
        (lambda d: d["methods"].pop("unlink"), "'unlink' is implemented by the engine"),
        (
            lambda d: d["methods"].__setitem__("crawl", {"group": "write", "args": []}),
            "'crawl' is in the contract",
        ),
        (lambda d: d["limits"].update(maxContentBytes=1), "limit maxContentBytes"),
        (lambda d: d["methods"]["getEntry"].update(positional=[]), "getEntry: positional"),
        (lambda d: d["captureOutcomes"].append("merged"), "capture outcomes"),
        (lambda d: d["errors"].append("supersession_loop"), "'supersession_loop'"),
    ],
)
def test_differences_detects_drift(surface, mutate, expect):
    doc = copy.deepcopy(surface)
    mutate(doc)
    problems = differences(doc)
    assert any(expect in p for p in problems), problems


def test_repinned_surface_that_disagrees_with_engine_refuses_startup(contracts_copy):
    path = contracts_copy / SURFACE
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["methods"]["recall"]["args"][1]["default"] = 7
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    repin(contracts_copy, SURFACE)
    with pytest.raises(ContractSurfaceError, match=r"recall\.topK: default is 7"):
        verify_startup(set(METHODS))
    # the routes alone still agree; the argument check can be skipped explicitly
    assert verify_startup(set(METHODS), check_arguments=False)


def test_surface_declaring_another_version_refuses(contracts_copy):
    path = contracts_copy / SURFACE
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["version"] = "0.9"
    path.write_text(json.dumps(doc), encoding="utf-8")
    repin(contracts_copy, SURFACE)
    with pytest.raises(ContractSurfaceError, match=r"declares MINI_SPHERE_CONTRACT@0\.9"):
        load_surface()


def test_highest_version_is_active(contracts_copy):
    for suffix in ("md", "surface.json"):
        old = contracts_copy / f"{CONTRACT_NAME}@{ACTIVE_VERSION}.{suffix}"
        new = contracts_copy / f"{CONTRACT_NAME}@0.10.{suffix}"
        shutil.copy(old, new)
    doc = json.loads((contracts_copy / f"{CONTRACT_NAME}@0.10.surface.json").read_text())
    doc.update(version="0.10", text=f"{CONTRACT_NAME}@0.10.md")
    (contracts_copy / f"{CONTRACT_NAME}@0.10.surface.json").write_text(json.dumps(doc))
    for suffix in ("md", "surface.json"):
        repin(contracts_copy, f"{CONTRACT_NAME}@0.10.{suffix}")
    records = verify_startup(set(METHODS))
    active = {r["file"] for r in records if r["active"]}
    assert active == {f"{CONTRACT_NAME}@0.10.md", f"{CONTRACT_NAME}@0.10.surface.json"}
    assert len(records) == len(CONTRACT_FILES) + 2  # the older versions stay pinned, verified


# The surface's `retrieval` numbers (group, key) -> their constant in retrieval/tuning.py. Not
# part of the startup check: these are tuning numbers, held to the contract by this test.
RETRIEVAL_CONSTANTS = {
    ("graph", "fanoutPerNode"): "GRAPH_FANOUT_PER_NODE",
    ("graph", "maxNodes"): "GRAPH_MAX_NODES",
    ("graph", "hopDecay"): "GRAPH_HOP_DECAY",
    ("fusion", "k"): "RRF_K",
    ("rerank", "volatilityFloors"): "DECAY_FLOOR",
    ("rerank", "rolledUpPenalty"): "ROLLED_UP_FACTOR",
    ("rerank", "mmrLambda"): "MMR_LAMBDA",
    ("rerank", "nameMissingFactor"): "NAME_MISSING_FACTOR",
    ("snippets", "strongCount"): "SNIPPET_TOP_COUNT",
    ("snippets", "strongChars"): "SNIPPET_TOP_CHARS",
    ("snippets", "tailChars"): "SNIPPET_TAIL_CHARS",
    ("snippets", "totalChars"): "SNIPPET_TOTAL_CHARS",
}


def test_recall_pipeline_numbers_match_the_contract(surface):
    from minisphere.engine.retrieval import tuning

    section = surface["retrieval"]
    contract = {f"{group}.{key}": section[group][key] for group, key in RETRIEVAL_CONSTANTS}
    engine = {
        f"{group}.{key}": getattr(tuning, const)
        for (group, key), const in RETRIEVAL_CONSTANTS.items()
    }
    assert contract == engine


def test_the_active_surface_lists_the_supersession_cycle_error_and_no_reserved_outcome(surface):
    assert "supersession_cycle" in surface["errors"]
    assert surface["captureOutcomes"] == ["stored", "blocked"]


def test_the_supersession_hint_numbers_and_tag_match_the_engine(surface):
    from minisphere.engine import constants, supersession_hints
    from minisphere.engine.vectors import hints

    section = surface["bindings"]["vector"]["supersessionHints"]
    assert (
        section["cosine"],
        section["minOverlap"],
        section["maxChars"],
        section["subjectWords"],
        section["briefLimit"],
        section["tag"],
    ) == (
        hints.HINT_COSINE,
        hints.HINT_MIN_OVERLAP,
        hints.HINT_MAX_CHARS,
        hints.SUBJECT_MIN_WORDS,
        constants.BRIEF_REVALIDATE_N,
        supersession_hints.HINT_TAG,
    )
    assert supersession_hints.HINT_TAG in surface["reservedTags"]["pipelineMarkers"]
