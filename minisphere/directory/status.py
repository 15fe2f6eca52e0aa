"""The directory's residency at a glance, read from its parts (the directory actor's
`residency_status`; operators, the console and the tests read it)."""

from __future__ import annotations

from typing import Any

from minisphere.directory.assembly import DirectoryParts


def residency_status(parts: DirectoryParts) -> dict[str, Any]:
    residents, hibernation, activator = parts.residents, parts.hibernation, parts.activator
    return {
        "resident": len(residents),
        "hibernating": len(residents.hibernations),
        "maxResident": hibernation.max_resident,
        "idleS": hibernation.idle_s,
        # actors still hibernating that may be beyond the cap while their wakes go on
        "hibernatingOverCap": hibernation.hibernating_over_cap,
        "spares": parts.pool.status(),
        "state": residents.state_sizes(),
        "wakes": dict(activator.wakes),
        "hibernations": dict(hibernation.counts),
        # processes ended after a clean hibernation instead of recycled, by why
        "processesEnded": dict(hibernation.retired),
        # resident actors ended because they stopped answering (liveness.py)
        "hungEnded": parts.liveness.ended,
        # forget clean-ups hibernated workspaces still owe (the store was down), and those
        # paid by a wake since the directory started (cleanups.py)
        "forgetCleanups": {
            "owed": hibernation.control.cleanup_debts.count(),
            "paid": parts.cleanups.paid,
        },
        # wakes refused (503 overloaded): behind too many others, no room for them, or
        # no process ready while as many starts as may run are under way
        "wakeAdmission": {
            **activator.wake_admission.status(),
            "refusedForRoom": hibernation.refused_for_room,
            "refusedForStarts": activator.refused_for_starts,
        },
    }
