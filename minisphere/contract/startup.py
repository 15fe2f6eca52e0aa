"""The contract check every service process runs before it serves (ingress replicas and every
workspace actor): the pinned files match their pins, and the routed methods are exactly the
contract's. A mismatch raises, which must stop the process."""

from __future__ import annotations

from minisphere.contract.pins import (
    PinnedContract,
    active_contract,
    contract_reference,
    verify_startup,
)
from minisphere.engine.methods import METHODS
from minisphere.wire.records import BornWith


def routed_methods() -> set[str]:
    """Every method the service routes: the contract surface plus maintenance."""
    return set(METHODS)


def verified_contracts() -> list[PinnedContract]:
    """[{name, version, sha256, file, role, active}] of the pinned contracts; raises if a pin
    does not hold or the routes disagree with the contract."""
    return [record.copy() for record in verify_startup(routed_methods())]


def born_with(records: list[PinnedContract]) -> list[BornWith]:
    """What a new workspace records: the active contract text as name@version+sha256."""
    if not records:
        return []
    chosen = active_contract(records)
    return [
        {
            "name": chosen["name"],
            "version": chosen["version"],
            "sha256": chosen["sha256"],
            "reference": contract_reference(chosen),
        }
    ]
