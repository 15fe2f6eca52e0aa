"""Where warm spares live on an autoscaling cluster: never on a node that would otherwise be
idle (a spare holds a slot, and a node holding anything is never removed), and never moved
back and forth."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minisphere.control.residency_policy import misplaced_spares, spare_home

NODES = ["n1", "n2", "n3"]
free_slots = st.fixed_dictionaries(
    {n: st.integers(min_value=0, max_value=3).map(float) for n in NODES}
)
busy_nodes = st.sets(st.sampled_from(NODES))
spare_layout = st.dictionaries(
    st.sampled_from([f"s{i}" for i in range(6)]), st.sampled_from(NODES), max_size=6
)


def test_spares_go_to_nodes_holding_workspaces_in_turn():
    free = {"n1": 2.0, "n2": 2.0, "n3": 5.0}
    assert [spare_home(t, free, {"n1", "n2"}, {}, 1) for t in range(3)] == ["n1", "n2", "n1"]
    assert spare_home(0, free, set(), {"n2": 1}, 1) == "n2"  # gathered on one node
    assert spare_home(0, free, set(), {}, 1) == "n3"  # a fresh cluster: the roomiest
    assert spare_home(0, {"n1": 0.0}, {"n1"}, {}, 1) is None  # no room: no spare


def test_a_spare_on_a_node_without_workspaces_is_retired_when_a_busy_node_has_room():
    free = {"n1": 1.0, "n2": 3.0}
    assert misplaced_spares({"s1": "n1", "s2": "n2"}, free, {"n1"}, 1) == ["s2"]
    assert misplaced_spares({"s1": "n1", "s2": "n2"}, {"n1": 0.0, "n2": 3.0}, {"n1"}, 1) == []
    # nothing bound anywhere: the spares gather on the node holding the most
    assert misplaced_spares({"s1": "n1", "s2": "n2", "s3": "n2"}, free, set(), 1) == ["s1"]


@given(free=free_slots, busy=busy_nodes, layout=spare_layout, turn=st.integers(0, 5))
def test_a_replacement_spare_is_never_placed_where_the_rules_would_retire_it(
    free, busy, layout, turn
):
    retired = set(misplaced_spares(layout, free, busy, 1))
    kept = {name: node for name, node in layout.items() if name not in retired}
    counts: dict[str, int] = {}
    for node in kept.values():
        counts[node] = counts.get(node, 0) + 1
    home = spare_home(turn, free, busy, counts, 1)
    if home is None:
        return
    assert free[home] >= 1
    after = {**kept, "replacement": home}
    after_free = {**free, home: free[home] - 1}
    assert "replacement" not in misplaced_spares(after, after_free, busy, 1)
