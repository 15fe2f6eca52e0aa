"""The residency policy: LRU above the cap, idle detection, placement by node."""
from hypothesis import given
from hypothesis import strategies as st

from minisphere.control.residency_policy import (
    idle_residents,
    lru_victims,
    node_with_room,
    placement,
)


def test_lru_victims_evict_the_least_recently_used_above_the_cap():
    used = {"a": 5.0, "b": 1.0, "c": 3.0, "d": 4.0}
    assert lru_victims(used, 4) == []
    assert lru_victims(used, 2) == ["b", "c"]
    assert lru_victims(used, 2, protect={"b"}) == ["c", "d"]
    assert lru_victims(used, 0) == ["b", "c", "d", "a"]


def test_idle_residents():
    used = {"a": 0.0, "b": 50.0, "c": 100.0}
    assert idle_residents(used, 100.0, 50) == ["a", "b"]
    assert idle_residents(used, 100.0, 0) == []


def test_placement_prefers_the_live_node_holding_the_file():
    assert placement("n1", ["n1", "n2"]) == ("n1", "node holding the file")
    node, why = placement("n9", ["n1"])
    assert node is None and "gone" in why
    assert placement(None, ["n1"])[0] is None


nodes_free = st.dictionaries(st.sampled_from(["n1", "n2", "n3", "n4"]),
                             st.integers(min_value=-2, max_value=4).map(float))


@given(free=nodes_free, preferred=st.sampled_from([None, "n1", "n2", "gone"]))
def test_a_new_actor_is_never_aimed_at_a_node_without_a_free_slot(free, preferred):
    chosen = node_with_room(preferred, free, 1)
    if chosen is None:                      # only when no node has room: then it is demand
        assert all(value < 1 for value in free.values())
    else:
        assert free[chosen] >= 1
        if preferred in free and free[preferred] >= 1:
            assert chosen == preferred      # the file's node whenever it has room
        else:
            assert free[chosen] == max(free.values())
