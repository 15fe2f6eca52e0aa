"""Starting and stopping the service the way the HTTP benchmarks run it: one local Ray cluster
with Serve, settings at their defaults but a fresh data folder, a free port, its own Ray
namespace and a known admin token. Ray is imported only when a service is started."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def chosen_front() -> str:
    from minisphere.settings import DEFAULT_HTTP_FRONT

    flag = os.environ.get("RAY_SERVE_ENABLE_HA_PROXY", "")
    by_flag = {"0": "python", "1": "haproxy"}.get(flag, DEFAULT_HTTP_FRONT)
    return os.environ.get("MINISPHERE_HTTP_FRONT") or by_flag


def start_local_service(name: str, admin_token: str, performance_env: bool = True):
    """(settings, base url, admin headers) of a service started under Ray namespace
    `minisphere-<name>`, data in a new temp folder. `performance_env`: the Serve settings the
    launcher adopts (actors.ray_env.SERVE_PERFORMANCE_ENV), unless the caller's environment says
    otherwise; the workers' own (actors.ray_env.WORKER_ENV) is set either way. Stop it with
    `stop_local_service()`. The HTTP front: MINISPHERE_HTTP_FRONT, else Ray's own switch
    RAY_SERVE_ENABLE_HA_PROXY if the caller's environment sets it, else the default."""
    import ray

    import serve_app
    from minisphere.settings import load_settings

    data = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    port = free_port()
    settings = load_settings(
        {
            "MINISPHERE_DATA_DIR": str(data),
            "MINISPHERE_PORT": str(port),
            "MINISPHERE_RAY_NAMESPACE": f"minisphere-{name}",
            "MINISPHERE_ADMIN_TOKEN": admin_token,
            "MINISPHERE_HTTP_FRONT": chosen_front(),
        }
    )
    serve_app.prepare_ray_env(performance=performance_env, front=settings.http_front)
    ray.init(
        num_cpus=os.cpu_count(),
        include_dashboard=False,
        namespace=settings.namespace,
        logging_level="WARNING",
        log_to_driver=False,
    )
    serve_app.start(settings)
    return settings, f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {admin_token}"}


def stop_local_service(settings=None) -> None:
    """Ray down with every process of the service (Serve's own shutdown would first wait out
    a 30 s timeout for its controller); with the run's `settings`, its replication daemon too
    (it runs in a session of its own, so that it outlives actors, and would outlive the
    benchmark)."""
    import ray

    import serve_app

    ray.shutdown()
    serve_app.release_ray_env()
    if settings is not None:
        from minisphere.durability.replication.daemon import LitestreamDaemon

        LitestreamDaemon(settings.replication.daemon_dir).stop()
