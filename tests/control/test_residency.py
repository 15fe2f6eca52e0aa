"""The residency policy: LRU above the cap, idle detection, placement by node."""
from minisphere.control.residency import idle_residents, lru_victims, placement


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
