"""The part of kustomize that deploy/kubernetes uses, to render its overlays offline (no kustomize binary here):
``resources`` (files and directories with a kustomization.yaml), ``namespace``, ``labels`` (``pairs``, added to
every resource's metadata), ``replicas`` and ``images``.  Any other field of a kustomization is an error, so that
the manifests cannot come to rely on something this rendering would silently skip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "namespace", "labels", "replicas", "images"}
NAMESPACED_NOT = {"Namespace"}


def load_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def _containers(resource: dict[str, Any]) -> list[dict[str, Any]]:
    spec = resource.get("spec", {}).get("template", {}).get("spec", {})
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def render(directory: Path) -> list[dict[str, Any]]:
    """The resources ``directory``'s kustomization.yaml makes, in order."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    unknown = set(kustomization) - SUPPORTED
    if unknown:
        raise ValueError(f"{directory}/kustomization.yaml: fields this rendering does not know: {sorted(unknown)}")
    resources: list[dict[str, Any]] = []
    for entry in kustomization.get("resources", []):
        path = (directory / entry).resolve()
        resources += render(path) if path.is_dir() else load_documents(path)
    for label in kustomization.get("labels", []):
        for resource in resources:
            resource.setdefault("metadata", {}).setdefault("labels", {}).update(label["pairs"])
    if "namespace" in kustomization:
        for resource in resources:
            if resource["kind"] not in NAMESPACED_NOT:
                resource["metadata"]["namespace"] = kustomization["namespace"]
    for replicas in kustomization.get("replicas", []):
        (target,) = [r for r in resources if r["metadata"]["name"] == replicas["name"] and "replicas" in r["spec"]]
        target["spec"]["replicas"] = replicas["count"]
    for image in kustomization.get("images", []):
        for resource in resources:
            for container in _containers(resource):
                name = container["image"].split(":")[0]
                if name == image["name"]:
                    container["image"] = f"{image.get('newName', name)}:{image['newTag']}"
    return resources
