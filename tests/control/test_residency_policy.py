"""The residency policy: LRU above the cap, idle detection, placement by node, and the size
of a spare pool that follows demand."""

from hypothesis import given
from hypothesis import strategies as st

from minisphere.control.residency_policy import (
    SPARE_ACTOR_IDLE_CPUS,
    SPARE_ACTOR_PSS_BYTES,
    SPARE_DEMAND_WINDOW_S,
    demand_spare_target,
    idle_residents,
    lru_victims,
    node_with_room,
    peak_wakes_per_bucket,
    placement,
    spare_budget,
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


nodes_free = st.dictionaries(
    st.sampled_from(["n1", "n2", "n3", "n4"]), st.integers(min_value=-2, max_value=4).map(float)
)


@given(free=nodes_free, preferred=st.sampled_from([None, "n1", "n2", "gone"]))
def test_a_new_actor_is_never_aimed_at_a_node_without_a_free_slot(free, preferred):
    chosen = node_with_room(preferred, free, 1)
    if chosen is None:  # only when no node has room: then it is demand
        assert all(value < 1 for value in free.values())
    else:
        assert free[chosen] >= 1
        if preferred in free and free[preferred] >= 1:
            assert chosen == preferred  # the file's node whenever it has room
        else:
            assert free[chosen] == max(free.values())


# ---- a spare pool that follows demand ---------------------------------------------------------
wake_times = st.lists(st.floats(min_value=0, max_value=2_000, allow_nan=False), max_size=200)


@given(wake_times, st.floats(min_value=0, max_value=2_000), st.integers(0, 40), st.integers(0, 40))
def test_the_demand_target_never_leaves_the_budget_nor_drops_below_the_floor_within_it(
    wakes, now, floor, ceiling
):
    target = demand_spare_target(wakes, now, floor, ceiling)
    assert 0 <= target <= ceiling
    assert target >= min(floor, ceiling)
    peak = peak_wakes_per_bucket(wakes, now)
    assert target == min(ceiling, max(floor, peak))


@given(wake_times, st.floats(min_value=0, max_value=2_000))
def test_the_busiest_minute_counts_no_wake_twice_and_none_outside_the_window(wakes, now):
    peak = peak_wakes_per_bucket(wakes, now)
    in_window = [t for t in wakes if now - t < SPARE_DEMAND_WINDOW_S]
    assert peak <= len(in_window)
    assert (peak == 0) == (not in_window)


@given(st.integers(1, 100), st.floats(min_value=0, max_value=SPARE_DEMAND_WINDOW_S - 60))
def test_a_burst_keeps_the_pool_its_size_until_it_leaves_the_window_then_it_shrinks(burst, since):
    wakes = [0.0] * burst  # all in one minute, `since` seconds ago
    assert demand_spare_target(wakes, since, floor=2, ceiling=1_000) == max(2, burst)
    assert demand_spare_target(wakes, SPARE_DEMAND_WINDOW_S, floor=2, ceiling=1_000) == 2


def test_a_steady_trickle_asks_for_no_more_than_its_busiest_minute():
    one_per_second = [float(t) for t in range(600)]
    assert peak_wakes_per_bucket(one_per_second, 600.0) == 60
    assert demand_spare_target(one_per_second, 600.0, floor=4, ceiling=23) == 23


@given(
    st.floats(min_value=0, max_value=2**40),
    st.floats(min_value=0, max_value=256),
    st.floats(min_value=0, max_value=1),
    st.floats(min_value=0, max_value=1),
)
def test_the_spare_budget_keeps_idle_spares_within_both_shares(memory, cpus, mem_share, cpu_share):
    budget = spare_budget(memory, cpus, mem_share, cpu_share)
    assert budget * SPARE_ACTOR_PSS_BYTES <= memory * mem_share + 1e-6
    assert budget * SPARE_ACTOR_IDLE_CPUS <= cpus * cpu_share + 1e-9
    assert spare_budget(memory, cpus, mem_share, cpu_share) >= 0


def test_the_spare_budget_of_this_machine():
    # 2 cores, 24 GiB: idle CPU binds first (0.2 of a core / 0.45% each)
    assert spare_budget(24 * 2**30, 2) == 44
