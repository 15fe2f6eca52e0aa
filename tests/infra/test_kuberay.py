"""infra/kuberay/rayservice.yaml: a KubeRay RayService with the required fields, serving the
same application with the same settings as infra/serve_config.yaml, volumes for the data,
S3 credentials from a Secret, and no secret values in the file."""

from __future__ import annotations

from ray.serve.schema import ServeDeploySchema

from tests.infra.helpers import RAYSERVICE, manifests, rayservice, serve_config

DATA_MOUNT = "/data/minisphere"


def pod_specs(spec: dict) -> list[dict]:
    cluster = spec["rayClusterConfig"]
    return [cluster["headGroupSpec"]["template"]["spec"]] + [
        group["template"]["spec"] for group in cluster["workerGroupSpecs"]
    ]


def test_infra_kuberay_required_fields():
    service = rayservice()
    assert service["apiVersion"] == "ray.io/v1" and service["kind"] == "RayService"
    assert service["metadata"]["name"]
    cluster = service["spec"]["rayClusterConfig"]
    assert cluster["enableInTreeAutoscaling"] is True
    assert cluster["rayVersion"].startswith("2.60")
    assert cluster["headGroupSpec"]["rayStartParams"] is not None
    workers = cluster["workerGroupSpecs"]
    assert workers and all(w["minReplicas"] <= w["replicas"] <= w["maxReplicas"] for w in workers)
    assert any(w["maxReplicas"] > w["minReplicas"] for w in workers)  # room to autoscale
    for pod in pod_specs(service["spec"]):
        assert pod["containers"][0]["image"]


def test_infra_kuberay_serve_config_is_the_same_app_and_settings():
    embedded = ServeDeploySchema.model_validate(
        __import__("yaml").safe_load(rayservice()["spec"]["serveConfigV2"])
    )
    standalone = ServeDeploySchema.model_validate(serve_config())
    assert embedded.model_dump(exclude_unset=True) == standalone.model_dump(exclude_unset=True)
    app = embedded.applications[0]
    assert app.import_path == "serve_app:configured_app"
    assert (
        app.deployments[0].autoscaling_config
        == standalone.applications[0].deployments[0].autoscaling_config
    )


def test_infra_kuberay_volumes_mounted_on_every_pod():
    claims = {d["metadata"]["name"] for d in manifests() if d["kind"] == "PersistentVolumeClaim"}
    for pod in pod_specs(rayservice()["spec"]):
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        assert DATA_MOUNT in mounts.values()
        for name in mounts:
            claim = volumes[name].get("persistentVolumeClaim", {}).get("claimName")
            assert claim in claims or "ephemeral" in volumes[name]
    env = serve_config()["applications"][0]["args"]
    assert env["MINISPHERE_DATA_DIR"] == DATA_MOUNT


def test_infra_kuberay_credentials_come_from_a_secret():
    for pod in pod_specs(rayservice()["spec"]):
        env = {e["name"]: e for e in pod["containers"][0]["env"]}
        for name in (
            "MINISPHERE_ADMIN_TOKEN",
            "MINISPHERE_S3_ACCESS_KEY_ID",
            "MINISPHERE_S3_SECRET_ACCESS_KEY",
        ):
            ref = env[name]["valueFrom"]["secretKeyRef"]
            assert ref["name"] and ref["key"] and "value" not in env[name]
    assert not [d for d in manifests() if d["kind"] == "Secret"], (
        "a Secret in the manifest would overwrite the real one on every apply"
    )
    text = RAYSERVICE.read_text()
    assert "aws_secret_access_key" not in text.lower()


def test_infra_kuberay_metrics_port_and_scheduler_documented():
    text = RAYSERVICE.read_text()
    assert "get_if_exists" in text and "exactly once" in text
    for group in [
        rayservice()["spec"]["rayClusterConfig"]["headGroupSpec"],
        *rayservice()["spec"]["rayClusterConfig"]["workerGroupSpecs"],
    ]:
        assert group["rayStartParams"]["metrics-export-port"] == "8080"


def test_every_pod_starts_ray_as_the_launcher_does_haproxy_naming_each_client():
    from actors.ray_env import HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS, PROXY_READY_ENV
    from tests.e2e.operator_cluster import HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS as OPERATORS

    assert OPERATORS == HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS
    for pod in pod_specs(rayservice()["spec"]):
        env = {item["name"]: item.get("value") for item in pod["containers"][0]["env"]}
        assert env["RAY_SERVE_ENABLE_HA_PROXY"] == "1"
        assert env["RAY_SERVE_HAPROXY_RETRY_ON"] == HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS
        assert env["MINISPHERE_TRUSTED_PROXIES"]  # HAProxy's peers on other pods name clients
        assert env["RAY_event_stats"] == "0"  # as the launcher starts Ray
        for name, value in PROXY_READY_ENV.items():  # as the launcher starts Ray
            assert env[name] == value
