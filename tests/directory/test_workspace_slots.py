"""Workspace slots: how many a node advertises, and when a workspace actor asks for one."""

from __future__ import annotations

import pytest

from minisphere.directory.placement import (
    WORKSPACE_SLOT_MEMORY_BYTES,
    node_workspace_slots,
    slot_request,
)
from minisphere.settings import WORKSPACE_SLOT_RESOURCE, load_settings

GIB = 1024**3


def test_a_node_advertises_slots_out_of_proportion_to_its_memory():
    assert node_workspace_slots(8 * GIB) == 64  # the RayService's 8 GiB workers
    assert node_workspace_slots(16 * GIB) == 2 * node_workspace_slots(8 * GIB)
    assert node_workspace_slots(WORKSPACE_SLOT_MEMORY_BYTES) == 1  # never zero


@pytest.mark.parametrize(
    "mode, advertised, asks",
    [("auto", True, True), ("auto", False, False), ("on", False, True), ("off", True, False)],
)
def test_a_workspace_actor_asks_for_a_slot_only_when_it_should(mode, advertised, asks):
    assert slot_request(mode, advertised) == (
        {"resources": {WORKSPACE_SLOT_RESOURCE: 1}} if asks else {}
    )


def test_the_launcher_advertises_the_slots_it_was_told(tmp_path):
    import serve_app

    env = {"MINISPHERE_DATA_DIR": str(tmp_path)}
    derived = serve_app.local_node_resources(load_settings(env))[WORKSPACE_SLOT_RESOURCE]
    assert derived >= 1
    told = load_settings({**env, "MINISPHERE_NODE_WORKSPACE_SLOTS": "12"})
    assert serve_app.local_node_resources(told) == {WORKSPACE_SLOT_RESOURCE: 12}
