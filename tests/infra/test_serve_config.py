"""infra/serve_config.yaml is a valid Ray Serve config (Ray's own schema classes) that deploys
this application: its import path resolves, its deployment exists, its settings are sane."""

from __future__ import annotations

import importlib

from ray.serve.config import AutoscalingConfig
from ray.serve.schema import ServeApplicationSchema, ServeDeploySchema

from minisphere.settings import load_settings
from tests.infra.helpers import serve_config

REQUIRED_ENV = {
    "MINISPHERE_DATA_DIR",
    "MINISPHERE_HOST",
    "MINISPHERE_RAY_NAMESPACE",
    "MINISPHERE_SYNCHRONOUS",
    "MINISPHERE_SNAPSHOT_STORE",
    "MINISPHERE_S3_BUCKET",
}
SECRET_ENV = {
    "MINISPHERE_ADMIN_TOKEN",
    "MINISPHERE_S3_ACCESS_KEY_ID",
    "MINISPHERE_S3_SECRET_ACCESS_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
}


def parsed() -> ServeDeploySchema:
    return ServeDeploySchema.model_validate(serve_config())


def test_infra_serve_config_parses_with_rays_schema():
    config = parsed()
    assert [app.name for app in config.applications] == ["minisphere"]
    app = config.applications[0]
    assert isinstance(app, ServeApplicationSchema) and app.route_prefix == "/"
    assert config.http_options.request_timeout_s and config.http_options.request_timeout_s > 0
    assert config.http_options.host == "0.0.0.0"


def test_infra_serve_config_import_path_resolves_to_the_ingress():
    app = parsed().applications[0]
    module_name, attribute = app.import_path.split(":")
    module = importlib.import_module(module_name)
    # what the Serve controller does with an import path and its args
    from ray.serve._private.api import call_user_app_builder_with_args_if_necessary
    from ray.serve.deployment import Application

    bound = call_user_app_builder_with_args_if_necessary(getattr(module, attribute), app.args)
    assert isinstance(bound, Application)
    names = {d.name for d in app.deployments}
    assert names == {module.MiniSphereIngress.name}  # overrides name a real deployment


def test_infra_serve_config_autoscaling_and_backpressure():
    deployment = parsed().applications[0].deployments[0]
    scaling = AutoscalingConfig(**deployment.autoscaling_config)  # Ray's own validation
    assert 1 <= scaling.min_replicas <= scaling.max_replicas
    assert scaling.target_ongoing_requests > 0
    assert deployment.max_queued_requests > 0  # backpressure is on
    assert deployment.max_ongoing_requests >= scaling.target_ongoing_requests
    assert deployment.backpressure_config.status_code in (429, 503)
    env = parsed().applications[0].args
    assert int(env["MINISPHERE_MIN_REPLICAS"]) == scaling.min_replicas
    assert int(env["MINISPHERE_MAX_REPLICAS"]) == scaling.max_replicas


def test_infra_serve_config_env_is_a_loadable_config_without_secrets(tmp_path):
    env = dict(parsed().applications[0].args)
    assert set(env) >= REQUIRED_ENV
    assert not SECRET_ENV & set(env), "secrets must come from the nodes' environment"
    assert all(isinstance(v, str) for v in env.values()), "env var values must be strings"
    env["MINISPHERE_DATA_DIR"] = str(tmp_path / "data")
    env["MINISPHERE_ADMIN_TOKEN"] = "a-long-admin-token-from-a-secret"
    settings = load_settings(env)  # the replicas' own loader accepts it
    assert settings.synchronous == "FULL" and settings.max_replicas == 4
    assert settings.snapshots.store == "s3"
    assert settings.snapshots.s3.bucket == env["MINISPHERE_S3_BUCKET"]


def serve_build(tmp_path, **env: str) -> ServeDeploySchema:
    """What `serve build serve_app:app` (Ray's own generator) writes, with `env` set."""
    import os
    import shutil
    import subprocess
    import sys

    import yaml

    from tests.infra.helpers import ROOT

    serve_cli = shutil.which("serve") or sys.executable + " -m ray.serve.scripts"
    out = tmp_path / "built.yaml"
    done = subprocess.run(
        [*serve_cli.split(), "build", "serve_app:app", "-o", str(out)],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return ServeDeploySchema.model_validate(yaml.safe_load(out.read_text()))


def test_infra_serve_config_matches_serve_build_output(tmp_path):
    """`serve build` (Ray's own generator) on the same import path yields the same app shape."""
    built = serve_build(tmp_path)
    ours = parsed()
    assert (
        built.applications[0].import_path.split(":")[0]
        == ours.applications[0].import_path.split(":")[0]
    )
    assert [d.name for d in built.applications[0].deployments] == [
        d.name for d in ours.applications[0].deployments
    ]
    built_deployment = built.applications[0].deployments[0]
    assert set(ours.applications[0].deployments[0].autoscaling_config) <= set(
        built_deployment.autoscaling_config
    ) | {"upscale_delay_s", "downscale_delay_s"}


def test_serve_run_takes_the_replica_bounds_from_the_environment(tmp_path):
    """`serve run serve_app:app` (no launcher) honours MINISPHERE_MIN_REPLICAS and
    MINISPHERE_MAX_REPLICAS: `serve build` imports the same app object and writes its bounds."""
    built = serve_build(tmp_path, MINISPHERE_MIN_REPLICAS="2", MINISPHERE_MAX_REPLICAS="5")
    scaling = built.applications[0].deployments[0].autoscaling_config
    assert (scaling["min_replicas"], scaling["max_replicas"]) == (2, 5)


def test_the_deployed_application_has_no_runtime_env_so_workspace_actors_skip_rays_shim():
    """Every actor inherits the runtime env of the actor that started it, and Ray starts a
    worker with a non-empty one through setup_worker.py (a second interpreter): the settings
    travel as the application's args instead, and nothing may set a runtime env again."""
    app = parsed().applications[0]
    assert not app.runtime_env, app.runtime_env
    assert set(app.args) >= REQUIRED_ENV


def test_the_builder_hands_each_replica_the_args_and_takes_its_bounds_from_them():
    import serve_app

    built = serve_app.configured_app(
        {
            "MINISPHERE_MIN_REPLICAS": 2,
            "MINISPHERE_MAX_REPLICAS": 3,
            "MINISPHERE_HIBERNATE_IDLE_S": "30",
        }
    )
    deployment = built._bound_deployment
    scaling = deployment._deployment_config.autoscaling_config
    assert (scaling.min_replicas, scaling.max_replicas) == (2, 3)
    assert deployment.init_kwargs["overrides"] == {
        "MINISPHERE_MIN_REPLICAS": "2",
        "MINISPHERE_MAX_REPLICAS": "3",
        "MINISPHERE_HIBERNATE_IDLE_S": "30",
    }
