"""Contract pins as the service sees them.

`minisphere.contract_pins.verify_startup(routed)` (when that module is present) checks the
pinned contract files and that the routed surface matches them; it raises on any mismatch,
which must stop the process. Without the module, the service runs with no pinned contracts.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging

from .surface import METHODS

log = logging.getLogger("minisphere.contracts")


def routed_methods() -> set[str]:
    """Every method the service routes: the contract surface plus maintenance."""
    return set(METHODS)


def verified_contracts() -> list[dict]:
    """[{name, version, sha256}] of the pinned contracts; raises if a pin does not hold."""
    if importlib.util.find_spec("minisphere.contract_pins") is None:
        log.warning("minisphere.contract_pins is not installed; running without contract pins")
        return []
    pins = importlib.import_module("minisphere.contract_pins")
    return [dict(c) for c in pins.verify_startup(routed_methods())]


def born_with(records: list[dict]) -> list[dict]:
    """What a new workspace records: the active contract text as name@version+sha256."""
    if not records:
        return []
    pins = importlib.import_module("minisphere.contract_pins")
    chosen = [pins.active_contract(records)] if hasattr(pins, "active_contract") else records
    return [{"name": r["name"], "version": r["version"], "sha256": r["sha256"],
             "reference": f"{r['name']}@{r['version']}+sha256:{r['sha256']}"} for r in chosen]
