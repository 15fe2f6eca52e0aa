"""Least privilege: the scheduler's gate reaches `runStalenessPass` and nothing else, checks its
arguments before touching the directory, and its ledger accepts only maintenance operations."""

import pytest

pytest.importorskip("ray")

from actors.scheduler.access import LEDGER_OPS, DirectoryLedger, StalenessPassAccess
from minisphere.errors import (
    InvalidArgument,
    MalformedRequest,
)


class Untouchable:
    """A directory stand-in that fails the test if anything reaches for it."""

    def __getattr__(self, name):
        raise AssertionError(f"the directory was touched ({name})")


def public(obj):
    return sorted(name for name in dir(obj) if not name.startswith("_"))


def test_the_gate_exposes_one_method_and_takes_no_new_attributes():
    gate = StalenessPassAccess(Untouchable())
    assert public(gate) == ["run_staleness_pass"]
    assert not hasattr(gate, "__dict__")
    with pytest.raises(AttributeError):
        gate.directory = object()
    with pytest.raises(AttributeError):
        gate.call = lambda *a: None


@pytest.mark.parametrize(
    "workspace_id, limit, error",
    [
        ("../etc", 10, MalformedRequest),
        ("ws-aaa", 0, InvalidArgument),
        ("ws-aaa", 100_001, InvalidArgument),
        ("ws-aaa", "10", InvalidArgument),
    ],
)
def test_the_gate_checks_arguments_before_reaching_the_directory(workspace_id, limit, error):
    with pytest.raises(error):
        StalenessPassAccess(Untouchable()).run_staleness_pass(workspace_id, limit)


def test_the_ledger_only_forwards_maintenance_operations():
    ledger = DirectoryLedger(Untouchable())
    assert public(ledger) == [
        "due_state",
        "last_cron_start",
        "record_pass",
        "record_run",
        "schedules",
    ]
    for op in ("delete", "create", "activate", "authenticate"):
        assert op not in LEDGER_OPS
        with pytest.raises(ValueError):
            ledger._call(op)
