"""Mini-Sphere on Ray Serve: the HTTP ingress deployment and the embedded launcher.

    python serve_app.py            # local Ray, 127.0.0.1:8000, data under ./data
    minisphere serve               # the same
    serve run serve_app:app        # with Ray Serve's own CLI (config from MINISPHERE_* env)

Routes are built by `minisphere.http_api`; the ingress replica's gateway (`actors.gateway`)
reaches the directory and the workspace actors.
"""
from __future__ import annotations

import logging
import signal
import sys
import threading

from ray import serve

from actors.gateway import Gateway
from minisphere.config import ConfigError, ServiceConfig, load_config
from minisphere.durability_config import DurabilityConfig
from minisphere.http_api import build_api
from minisphere.service_contracts import verified_contracts

log = logging.getLogger("minisphere.serve")
APP_NAME = "minisphere"


@serve.deployment(
    name="MiniSphereIngress",
    max_ongoing_requests=512,
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 64,
                        "upscale_delay_s": 10, "downscale_delay_s": 120},
    ray_actor_options={"num_cpus": 0.25},
    health_check_period_s=10,
)
@serve.ingress()
class MiniSphereIngress:
    def __init__(self, settings: dict | None = None):
        logging.basicConfig(level=logging.INFO)
        self.config = ServiceConfig.from_dict(settings) if settings else load_config()
        self.contracts = verified_contracts()     # a pin mismatch stops the replica here
        self.gateway = Gateway(self.config)
        # `serve run serve_app:app` never calls start(): make sure the scheduler exists anyway
        # (a named get-if-exists singleton, so every replica finds the same one)
        from actors.scheduled_tasks_actor import get_scheduled_tasks
        get_scheduled_tasks(self.config)
        log.info("ingress replica up; data in %s; %d pinned contracts", self.config.data_dir,
                 len(self.contracts))
        if self.config.admin_token_source != "env":
            log.warning("admin token: see %s/.admin_token (set MINISPHERE_ADMIN_TOKEN to choose "
                        "one)", self.config.data_dir)

    def __serve_build_asgi_app__(self):
        # request logs, metrics and the import/export routes: actors/ops.py (issue 9)
        from actors.ops import instrument
        return instrument(build_api(self.gateway, self.contracts), self.gateway)

    async def check_health(self):
        await self.gateway.ready()


def build_app(config: ServiceConfig):
    """The Serve application for a resolved config (replica counts from the config)."""
    scaling = {"min_replicas": config.min_replicas, "max_replicas": config.max_replicas,
               "target_ongoing_requests": 64, "upscale_delay_s": 10, "downscale_delay_s": 120}
    return MiniSphereIngress.options(autoscaling_config=scaling).bind(config.to_dict())


# `serve run serve_app:app`: each replica reads its config from the environment.
app = MiniSphereIngress.bind()


def start(config: ServiceConfig, *, blocking_ready: bool = True):
    """Start (or join) Ray and Serve and deploy the app. Returns the Serve handle."""
    import ray
    if not ray.is_initialized():
        ray.init(address=config.ray_address or None, namespace=config.namespace,
                 include_dashboard=False, logging_level=logging.WARNING)
    logging_config = {"enable_access_log": config.access_log}
    serve.start(http_options={"host": config.host, "port": config.port},
                logging_config=logging_config)
    handle = serve.run(build_app(config), name=APP_NAME, route_prefix="/",
                       logging_config=logging_config)
    start_scheduler(config)
    return handle


SCHEDULER_READY_TIMEOUT_S = 120.0


def start_scheduler(config: ServiceConfig):
    """The scheduled-tasks singleton (issue 5): created once, found by name on every later
    start (get-if-exists), so restarts and extra launchers never make a second scheduler."""
    import ray
    from actors.scheduled_tasks_actor import get_scheduled_tasks
    scheduler = get_scheduled_tasks(config)
    status = ray.get(scheduler.status.remote(), timeout=SCHEDULER_READY_TIMEOUT_S)
    log.info("scheduled tasks: %d staleness jobs", status["jobs"])
    return scheduler


def banner(config: ServiceConfig) -> str:
    shown = config.admin_token if config.admin_token_source != "env" else "(from MINISPHERE_ADMIN_TOKEN)"
    where = f"http://{config.host}:{config.port}"
    return "\n".join([
        f"Mini-Sphere is listening on {where}  (API docs: {where}/docs)",
        f"  data folder : {config.data_dir}",
        f"  snapshots   : {DurabilityConfig.from_dict(config.durability).describe()}",
        f"  admin token : {shown}"
        + (f"  (kept in {config.data_dir}/.admin_token)" if config.admin_token_source != "env" else ""),
        f"  try         : curl -H 'Authorization: Bearer <admin token>' {where}/v1/workspaces",
        "  stop        : press Ctrl+C (or send SIGTERM); data stays in the data folder",
    ])


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config()
    except ConfigError as exc:
        print(f"minisphere: {exc}", file=sys.stderr)
        return 2
    print(f"starting Ray and Serve (data in {config.data_dir}) ...", flush=True)
    start(config)
    print(banner(config), flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    print("stopping ...", flush=True)
    import ray
    serve.shutdown()
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
