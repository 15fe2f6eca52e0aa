"""The KubeRay manifest's Kubernetes objects read through the `kubernetes` client's own models.

The RayService is a custom resource, but its pod templates are plain `PodTemplateSpec`s and the
PVC and ConfigMap are core objects: each is converted field by field into the client's models,
refusing any key the model does not have (a typo such as `volumeMount` or `secretKeyref` would
otherwise be dropped silently by the API server's pruning, or fail only at `kubectl apply`) and
any value of the wrong type. The models' constructors then check required fields (a container
without a name, an env entry without one).

The worker group's numbers are the ones the service computes: the workspace slots advertised in
`rayStartParams.resources` follow from the pod's memory limit, and the resident cap in the Serve
config fits the slots of the largest cluster the autoscaler may build.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from minisphere.control.residency_policy import MAX_SPARES
from minisphere.directory.placement import node_workspace_slots
from minisphere.settings import WORKSPACE_SLOT_RESOURCE
from tests.infra.helpers import manifests, rayservice

client = pytest.importorskip("kubernetes.client")
quantity = pytest.importorskip("kubernetes.utils").parse_quantity

PRIMITIVES = {"str": str, "int": int, "bool": bool, "float": (int, float)}


class ManifestError(AssertionError):
    pass


def strict_model(data, type_name: str, where: str = "$"):
    """`data` (parsed YAML) as the client's model named `type_name`; ManifestError on an unknown
    key or a value of the wrong type."""
    if data is None:
        return None
    listed = re.fullmatch(r"(?:List\[|list\[)(.+)\]", type_name)
    if listed:
        if not isinstance(data, list):
            raise ManifestError(f"{where}: expected a list, got {type(data).__name__}")
        return [strict_model(item, listed.group(1), f"{where}[{i}]") for i, item in enumerate(data)]
    mapped = re.fullmatch(r"(?:Dict\[str, |dict\(str, )(.+)[\])]", type_name)
    if mapped:
        if not isinstance(data, dict):
            raise ManifestError(f"{where}: expected a mapping, got {type(data).__name__}")
        return {k: strict_model(v, mapped.group(1), f"{where}.{k}") for k, v in data.items()}
    if type_name in PRIMITIVES:
        if not isinstance(data, PRIMITIVES[type_name]) or (
            type_name != "bool" and isinstance(data, bool)
        ):
            raise ManifestError(f"{where}: expected {type_name}, got {data!r}")
        return data
    if type_name == "object":
        return data
    model = getattr(client, type_name)
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: expected a {type_name} mapping, got {data!r}")
    by_key = {key: attr for attr, key in model.attribute_map.items()}
    unknown = sorted(set(data) - set(by_key))
    if unknown:
        raise ManifestError(f"{where}: {type_name} has no field {unknown}")
    kwargs = {
        by_key[key]: strict_model(value, model.openapi_types[by_key[key]], f"{where}.{key}")
        for key, value in data.items()
    }
    try:
        return model(**kwargs)
    except ValueError as exc:  # the model's own required-field checks
        raise ManifestError(f"{where}: {exc}") from None


def groups() -> list[tuple[str, dict]]:
    cluster = rayservice()["spec"]["rayClusterConfig"]
    return [("head", cluster["headGroupSpec"])] + [
        (group["groupName"], group) for group in cluster["workerGroupSpecs"]
    ]


def start_resources(group: dict) -> dict:
    """rayStartParams.resources as KubeRay passes it to `ray start`: a JSON string quoted once
    more for the shell."""
    raw = group["rayStartParams"].get("resources")
    if raw is None:
        return {}
    value = json.loads(raw)
    return json.loads(value) if isinstance(value, str) else value


@pytest.mark.parametrize("name", [name for name, _ in groups()])
def test_a_typo_in_a_pod_template_of_the_rayservice_fails(name):
    group = dict(groups())[name]
    template = strict_model(group["template"], "V1PodTemplateSpec", f"{name}.template")
    volumes = {v.name for v in template.spec.volumes or []}
    for container in template.spec.containers:
        assert container.image, f"{name}: {container.name} has no image"
        mounted = {m.name for m in container.volume_mounts or []}
        assert mounted <= volumes, f"{name}: mounts of undeclared volumes {mounted - volumes}"
        for var in container.env or []:
            assert (var.value is None) != (var.value_from is None), (
                f"{name}: env {var.name} needs exactly one of value / valueFrom"
            )
        for bound in ("requests", "limits"):
            for amount in (getattr(container.resources, bound) or {}).values():
                quantity(amount)  # ValueError on a quantity Kubernetes would refuse
    assert all(isinstance(v, str) for v in group["rayStartParams"].values()), (
        f"{name}: rayStartParams is a map of strings in the CRD"
    )


def test_a_typo_in_the_core_objects_of_the_manifest_fails():
    for document in manifests():
        if document["kind"] == "RayService":
            continue
        model = f"V1{document['kind']}"
        strict_model(document, model, document["kind"])


def test_the_strict_reader_refuses_what_a_typo_makes():
    """The reader itself: a misspelt key, a wrong type and a missing required field."""
    good = {
        "spec": {
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "x",
                    "volumeMounts": [{"name": "d", "mountPath": "/d"}],
                }
            ]
        }
    }
    strict_model(good, "V1PodTemplateSpec")
    misspelt = yaml.safe_load(yaml.safe_dump(good).replace("volumeMounts", "volumeMount"))
    with pytest.raises(ManifestError, match="no field"):
        strict_model(misspelt, "V1PodTemplateSpec")
    wrong_type = {
        "spec": {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": "8080"}]}]}
    }
    with pytest.raises(ManifestError, match="expected int"):
        strict_model(wrong_type, "V1PodTemplateSpec")
    nameless = {"spec": {"containers": [{"image": "x"}]}}
    with pytest.raises(ManifestError, match="name"):
        strict_model(nameless, "V1PodTemplateSpec")


def test_worker_slots_do_not_follow_the_pod_memory():
    for name, group in groups():
        advertised = start_resources(group).get(WORKSPACE_SLOT_RESOURCE, 0)
        if name == "head":
            assert advertised == 0, "the head takes no workspaces"
            continue
        [container] = group["template"]["spec"]["containers"]
        memory = float(quantity(container["resources"]["limits"]["memory"]))
        assert advertised == node_workspace_slots(memory), (
            f"{name}: advertise node_workspace_slots({container['resources']['limits']['memory']})"
        )


def test_the_resident_cap_does_not_fit_the_largest_cluster():
    """Above the cap, wakes hibernate others instead of asking for a node: the cap must leave
    the autoscaler room, yet fit in the slots of the largest cluster with its spares."""
    config = yaml.safe_load(rayservice()["spec"]["serveConfigV2"])
    env = config["applications"][0]["args"]
    assert env["MINISPHERE_WORKSPACE_SLOTS"] == "on"
    most_slots = sum(
        start_resources(group).get(WORKSPACE_SLOT_RESOURCE, 0) * group["maxReplicas"]
        for _, group in groups()[1:]
    )
    fewest_slots = sum(
        start_resources(group).get(WORKSPACE_SLOT_RESOURCE, 0) * max(1, group["minReplicas"])
        for _, group in groups()[1:]
    )
    cap = int(env["MINISPHERE_MAX_RESIDENT"])
    assert fewest_slots < cap <= most_slots - MAX_SPARES, (fewest_slots, cap, most_slots)
