"""The environment the launcher gives Ray for its HTTP front: HAProxy by default, each service
on a host with ports and a folder of its own (Ray's defaults are one set per host), HAProxy told
to name the client (the failed-auth budget is per client address), the Python proxy a setting."""

from __future__ import annotations

from pathlib import Path

from actors import ray_env

NODE_ID_CHARS = 56  # Ray names each node's HAProxy folder by its node id
HAPROXY_SOCKET_PATH_MAX_BYTES = 97


def prepared(front: str = "haproxy", **already: str) -> dict[str, str]:
    env = dict(already)
    ray_env.prepare_ray_env(environ=env, front=front)
    return env


def test_two_services_on_one_host_get_distinct_haproxy_ports_and_folders():
    first, second = prepared(), prepared()
    try:
        for name in (*ray_env.HAPROXY_PORTS, ray_env.HAPROXY_CONFIG_FILE, *ray_env.HAPROXY_PATHS):
            assert first[name] != second[name], name
        ports = [int(first[name]) for name in ray_env.HAPROXY_PORTS]
        assert len(set(ports)) == len(ports) and all(port > 0 for port in ports)
    finally:
        ray_env.release_ray_env(first)
        ray_env.release_ray_env(second)


def test_a_service_started_from_within_another_gets_its_own_haproxy_ports_and_folder():
    outer = prepared()
    inner = prepared(**outer)  # a launcher run from a process the first one prepared
    try:
        for name in (*ray_env.HAPROXY_PORTS, ray_env.HAPROXY_CONFIG_FILE, *ray_env.HAPROXY_PATHS):
            assert outer[name] != inner[name], name
    finally:
        ray_env.release_ray_env(outer)
        ray_env.release_ray_env(inner)


def test_haproxys_socket_paths_fit_under_its_limit_below_rays_node_folder():
    env = prepared()
    try:
        for name in ray_env.HAPROXY_PATHS:
            where = Path(env[name])
            inside = where.parent / ("x" * NODE_ID_CHARS) / where.name
            assert len(str(inside).encode()) <= HAPROXY_SOCKET_PATH_MAX_BYTES, name
    finally:
        ray_env.release_ray_env(env)


def test_haproxy_is_told_to_name_the_client_on_a_line_of_its_own():
    env = prepared()
    try:
        assert env[ray_env.HAPROXY_FLAG] == "1"
        first, second = env[ray_env.HAPROXY_RETRY_ON].split("\n")
        assert first == "conn-failure" and second.strip() == "option forwardfor"
    finally:
        ray_env.release_ray_env(env)


def test_the_python_proxy_front_switches_haproxy_off_and_sets_none_of_its_names():
    env = prepared("python", RAY_SERVE_ENABLE_HA_PROXY="1")
    assert env[ray_env.HAPROXY_FLAG] == "0"
    assert not any(name.startswith("RAY_SERVE_HAPROXY_") for name in env)


def test_an_operators_own_haproxy_folder_is_kept_and_never_removed(tmp_path):
    config = str(tmp_path / "haproxy.cfg")
    env = prepared(RAY_SERVE_HAPROXY_CONFIG_FILE_LOC=config)
    assert env[ray_env.HAPROXY_CONFIG_FILE] == config
    ray_env.release_ray_env(env)
    assert tmp_path.is_dir() and env[ray_env.HAPROXY_CONFIG_FILE] == config


def test_release_removes_the_folder_the_launcher_made():
    env = prepared()
    folder = Path(env[ray_env.HAPROXY_CONFIG_FILE]).parent
    assert folder.is_dir()
    ray_env.release_ray_env(env)
    assert not folder.exists() and ray_env.HAPROXY_CONFIG_FILE not in env


def test_a_replica_believes_the_front_ray_runs_not_the_setting():
    assert ray_env.running_front({ray_env.HAPROXY_FLAG: "1"}) == "haproxy"
    assert ray_env.running_front({ray_env.HAPROXY_FLAG: "0"}) == "python"
    assert ray_env.running_front({}) == "python"  # Ray's own default


def test_rays_debug_event_statistics_are_off_unless_an_operator_turns_them_on():
    assert prepared("python")["RAY_event_stats"] == "0"
    assert prepared("python", RAY_event_stats="1")["RAY_event_stats"] == "1"


def test_a_proxy_slow_to_start_on_a_loaded_node_is_not_killed_after_five_seconds():
    """Serve's own 5 s readiness bound failed `serve.start` on a busy machine: the launcher
    gives the proxy longer, and an operator's own value is kept."""
    assert float(prepared("python")["RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"]) >= 30
    kept = prepared("python", RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S="12")
    assert kept["RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"] == "12"
