"""Loading the deployment files of infra/ for the infra tests."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SERVE_CONFIG = ROOT / "infra" / "serve_config.yaml"
RAYSERVICE = ROOT / "infra" / "kuberay" / "rayservice.yaml"


def serve_config() -> dict:
    return yaml.safe_load(SERVE_CONFIG.read_text(encoding="utf-8"))


def manifests() -> list[dict]:
    return [d for d in yaml.safe_load_all(RAYSERVICE.read_text(encoding="utf-8")) if d]


def rayservice() -> dict:
    found = [d for d in manifests() if d.get("kind") == "RayService"]
    assert len(found) == 1, "exactly one RayService in the manifest"
    return found[0]
