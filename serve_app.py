"""Mini-Sphere on Ray Serve: the HTTP ingress deployment and the embedded launcher.

    python serve_app.py            # local Ray, 127.0.0.1:8000, data under ./data
    minisphere serve               # the same (runs this file)
    serve run serve_app:app        # with Ray Serve's own CLI (settings from MINISPHERE_* env)
    serve deploy infra/serve_config.yaml   # serve_app:configured_app, settings from its args

Routes are built by `minisphere.http.app`; the ingress replica's gateway
(`actors/ingress/gateway.py`) reaches the directory and the workspace actors.
"""

from __future__ import annotations

import compileall
import dataclasses
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from ray import serve
from ray.serve import Application, Deployment
from ray.serve.handle import DeploymentHandle

from actors.directory.actor import get_directory
from actors.handles import Handle
from actors.ingress.gateway import Gateway
from actors.ingress.metrics import ServiceMetrics
from actors.ingress.transfer import TransferOps
from actors.process_logging import log_to_stderr
from actors.ray_env import prepare_ray_env, release_ray_env, running_front
from actors.scheduler.actor import get_scheduled_tasks
from minisphere.contract.startup import verified_contracts
from minisphere.directory.placement import node_workspace_slots
from minisphere.durability.replication import LitestreamDaemon
from minisphere.errors import ConfigError, MiniSphereError
from minisphere.http.app import build_api
from minisphere.settings import (
    WORKSPACE_SLOT_RESOURCE,
    Settings,
    deploy_overrides,
    load_replica_bounds,
    load_settings,
    restrict_file_modes,
)

log = logging.getLogger("minisphere.serve")
APP_NAME = "minisphere"
SCHEDULER_READY_TIMEOUT_S = 120.0
STOP_HIBERNATE_TIMEOUT_S = 20.0  # residents draining and snapshotting on Ctrl-C, at most
INGRESS_AUTOSCALING = {
    "target_ongoing_requests": 64,
    "upscale_delay_s": 10,
    "downscale_delay_s": 120,
}
# A replica answers at most INGRESS_MAX_INFLIGHT requests at once and refuses the next with its
# own 503 `overloaded` + Retry-After (minisphere/http/admission.py); Serve's bounds sit above it
# as a backstop (its proxy queues at most MAX_QUEUED_REQUESTS more, then answers 503 with
# Retry-After itself), the same as infra/serve_config.yaml.
INGRESS_MAX_INFLIGHT = 448
MAX_ONGOING_REQUESTS = 512
MAX_QUEUED_REQUESTS = 2048


@serve.deployment(
    name="MiniSphereIngress",
    max_ongoing_requests=MAX_ONGOING_REQUESTS,
    max_queued_requests=MAX_QUEUED_REQUESTS,
    ray_actor_options={"num_cpus": 0.25},
    health_check_period_s=10,
)
@serve.ingress()
class MiniSphereIngress:
    def __init__(self, settings: Settings | None = None, overrides: dict[str, str] | None = None):
        restrict_file_modes()  # `serve run` / `serve deploy` never run the launcher
        log_to_stderr()
        # each replica resolves its settings on its own node (its data folder made there),
        # from the node's environment (where the secrets are) under the deploy config's args
        loaded = settings or load_settings({**os.environ, **(overrides or {})})
        # whether HAProxy names the client depends on the front Ray runs, not on the setting
        self.settings = dataclasses.replace(loaded, http_front=running_front())
        self.contracts = verified_contracts()  # a pin mismatch stops the replica here
        self.gateway = Gateway(self.settings)
        # `serve run serve_app:app` never calls start(): make sure the scheduler exists anyway
        # (a named get-if-exists singleton, so every replica finds the same one)
        get_scheduled_tasks(self.settings)
        log.info(
            "ingress replica up; data in %s; %d pinned contracts",
            self.settings.data_dir,
            len(self.contracts),
        )
        if self.settings.admin_token_source != "env":
            log.warning(
                "admin token: see %s/.admin_token (set MINISPHERE_ADMIN_TOKEN to choose one)",
                self.settings.data_dir,
            )

    def __serve_build_asgi_app__(self) -> FastAPI:
        try:
            observe: Callable[[dict[str, Any]], None] | None = ServiceMetrics(self.gateway).observe
        except Exception:  # outside a Ray worker: logs only
            log.warning("Ray metrics unavailable; request logs only", exc_info=True)
            observe = None
        return build_api(
            self.gateway,
            self.contracts,
            transfer=TransferOps(self.gateway),
            observe=observe,
            request_id=serve_request_id,
            max_inflight=INGRESS_MAX_INFLIGHT,
            mcp=self.settings.mcp,
            request_log=self.settings.access_log,
        )

    async def check_health(self) -> None:
        await self.gateway.ready()


def serve_request_id() -> str | None:
    """Ray Serve's id of the request being handled (the one in its logs and its header)."""
    try:
        from ray.serve.context import _get_serve_request_context

        return _get_serve_request_context().request_id or None
    except Exception:  # noqa: BLE001 - not inside a Serve replica
        return None


def autoscaled(min_replicas: int, max_replicas: int) -> Deployment:
    """The ingress deployment between these replica counts."""
    # mypy keeps a decorated class's own type: Serve's Deployment (and its .options) is unseen
    deployment: Deployment = MiniSphereIngress.options(  # type: ignore[attr-defined]
        autoscaling_config={
            "min_replicas": min_replicas,
            "max_replicas": max_replicas,
            **INGRESS_AUTOSCALING,
        }
    )
    return deployment


def build_app(settings: Settings) -> Application:
    """The Serve application for resolved settings (replica counts from the settings)."""
    return autoscaled(settings.min_replicas, settings.max_replicas).bind(settings)


# `serve run serve_app:app`: the replica counts from MINISPHERE_MIN_REPLICAS and
# MINISPHERE_MAX_REPLICAS here; each replica reads its other settings from the environment.
app = autoscaled(*load_replica_bounds()).bind()


def configured_app(args: dict[str, object]) -> Application:
    """`serve deploy`'s application builder (`import_path: serve_app:configured_app`): the
    settings are the config's `args` (`MINISPHERE_*` names) over the nodes' environment.

    Why args and not the application's `runtime_env.env_vars`: every actor inherits the
    runtime env of the one that started it, so with env vars there every workspace actor the
    directory starts would be started by Ray through its runtime-env shim (`setup_worker.py`,
    a second interpreter importing Ray first), which makes every spare's and every wake's
    process start dearer. With args the application has no runtime env at all, and a
    changed args still makes Serve replace the replicas (it is part of the code version)."""
    overrides = deploy_overrides(args)
    bounds = load_replica_bounds({**os.environ, **overrides})
    return autoscaled(*bounds).bind(overrides=overrides)


def local_node_resources(settings: Settings) -> dict[str, float]:
    """The custom resources of the one node the launcher starts: its workspace slots (a
    `ray start` node is given the same with `--resources`, see infra/README.md)."""
    slots = settings.residency.node_workspace_slots or node_workspace_slots(
        os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    )
    return {WORKSPACE_SLOT_RESOURCE: slots}


def compile_worker_code() -> bool:
    """Write the bytecode of the code every workspace actor imports (the engine, hosting and
    durability layers, `actors/`, this file), where it is imported from; False if some of it
    could not be written (a read-only install keeps the bytecode pip wrote).

    Why: each workspace actor is a new Python process. Without bytecode on disk it compiles
    every module from source before it can bind, paid by every spare and every wake. An
    editable install has none until an import writes it, and under PYTHONDONTWRITEBYTECODE no
    import ever does, so every worker would compile again.
    Checking bytecode that is up to date costs a stat per file."""
    import actors
    import minisphere

    written = True
    for package in (minisphere, actors):
        assert package.__file__ is not None  # both are regular packages, not namespaces
        written &= bool(compileall.compile_dir(Path(package.__file__).parent, quiet=2))
    return written and bool(compileall.compile_file(Path(__file__), quiet=2))


def start(settings: Settings) -> DeploymentHandle[Any]:
    """Start (or join) Ray and Serve and deploy the app. Returns the Serve handle."""
    import ray

    restrict_file_modes()  # before Ray starts: its local processes inherit the umask
    compile_worker_code()
    if not ray.is_initialized():
        prepare_ray_env(front=settings.http_front)
        joining = bool(settings.ray_address)  # a cluster's nodes advertise their own slots
        ray.init(
            address=settings.ray_address or None,
            namespace=settings.namespace,
            include_dashboard=False,
            logging_level=logging.WARNING,
            resources=None if joining else local_node_resources(settings),
        )
    logging_config = {"enable_access_log": settings.access_log}
    serve.start(
        http_options={"host": settings.host, "port": settings.port}, logging_config=logging_config
    )
    handle = serve.run(
        build_app(settings), name=APP_NAME, route_prefix="/", logging_config=logging_config
    )
    start_scheduler(settings)
    ray.get(get_directory(settings).start.remote(), timeout=SCHEDULER_READY_TIMEOUT_S)
    return handle


def deployment_messages() -> str:
    """What Serve says of each deployment of the app (a failing replica constructor's own
    error is there), for an operator who would otherwise see only "deploying ... failed"."""
    try:
        app = serve.status().applications.get(APP_NAME)
    except Exception as exc:  # noqa: BLE001 - the controller itself may be gone
        return f"(Serve's status could not be read: {exc.__class__.__name__})"
    if app is None:
        return "(Serve has no status for the application)"
    lines = [
        f"{name}: {status.status} {status.message}".rstrip()
        for name, status in app.deployments.items()
    ]
    return "\n".join([f"application {APP_NAME}: {app.status} {app.message}".rstrip(), *lines])


def start_scheduler(settings: Settings) -> Handle:
    """The scheduled-tasks singleton: created once, found by name on every later start
    (get-if-exists), so restarts and extra launchers never make a second scheduler."""
    import ray

    scheduler = get_scheduled_tasks(settings)
    status = ray.get(scheduler.status.remote(), timeout=SCHEDULER_READY_TIMEOUT_S)
    log.info("scheduled tasks: %d staleness jobs", status["jobs"])
    return scheduler


def banner(settings: Settings) -> str:
    shown = (
        settings.admin_token
        if settings.admin_token_source != "env"
        else "(from MINISPHERE_ADMIN_TOKEN)"
    )
    where = f"http://{settings.host}:{settings.port}"
    kept = (
        f"  (kept in {settings.data_dir}/.admin_token)"
        if settings.admin_token_source != "env"
        else ""
    )
    return "\n".join(
        [
            f"Mini-Sphere is listening on {where}  (API docs: {where}/docs)",
            f"  data folder : {settings.data_dir}",
            f"  snapshots   : {settings.snapshots.describe()}",
            f"  admin token : {shown}{kept}",
            f"  try         : curl -H 'Authorization: Bearer <admin token>' {where}/v1/workspaces",
            "  stop        : press Ctrl+C (or send SIGTERM); data stays in the data folder",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    restrict_file_modes()  # first: load_settings already writes the admin token file
    log_to_stderr()
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"minisphere: {exc.message}", file=sys.stderr)
        return 2
    try:
        verified_contracts()  # the pins first: a replica refusing them says so only in
    except MiniSphereError as exc:  # Ray's logs, behind Serve's generic deploy failure
        print(f"minisphere: {exc.message}", file=sys.stderr)
        return 2
    print(f"starting Ray and Serve (data in {settings.data_dir}) ...", flush=True)
    try:
        start(settings)
    except RuntimeError as exc:  # Serve's "Deploying application ... failed"
        print(f"minisphere: {exc}\n{deployment_messages()}", file=sys.stderr)
        serve.shutdown()
        return 1
    print(banner(settings), flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    print("stopping ...", flush=True)
    stop_service(settings)
    return 0


def stop_service(settings: Settings) -> None:
    """Stop what `start` started. On the embedded Ray the residents hibernate first (each
    drains and snapshots what changed), then Ray stops with every process of the service:
    Serve's own shutdown waits out a timeout for its controller and stops nothing that Ray's
    shutdown would not. On a cluster this launcher joined, the app is taken off the cluster
    and the workspaces stay with it."""
    import ray

    if settings.ray_address:
        serve.shutdown()
    else:
        try:
            hibernated = ray.get(
                get_directory(settings).hibernate_all.remote("shutdown"),
                timeout=STOP_HIBERNATE_TIMEOUT_S,
            )
            print(f"hibernated {hibernated} resident workspace(s)", flush=True)
        except Exception as exc:  # noqa: BLE001 - stop anyway; committed writes are on disk
            print(
                f"could not hibernate every resident workspace ({exc.__class__.__name__}); "
                "their committed writes are on disk",
                file=sys.stderr,
                flush=True,
            )
        # the node's replication daemon outlives the actors that started it: stop it too
        LitestreamDaemon(settings.replication.daemon_dir).stop()
    ray.shutdown()
    release_ray_env()


if __name__ == "__main__":
    sys.exit(main())
