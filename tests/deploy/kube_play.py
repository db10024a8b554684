"""deploy/kubernetes, rendered, turned into what `podman kube play` (podman 4.3) runs: the stand-in for a Kubernetes
cluster on a machine without one.

What is kept as written: every pod template (init containers, containers, commands and arguments, environment
including ``fieldRef`` to the pod's name, security contexts, resources, ports, volume mounts), ConfigMaps, the
persistent volumes (one claim per StatefulSet pod and template, named as Kubernetes names them:
``<template>-<statefulset>-<ordinal>``), StatefulSets' replica counts and their pods' names and hostnames.

What stands in for what podman 4.3 does not do:
- Services and the cluster's DNS: each pod gets a fixed address on the test's network, and every pod lists every
  name a Service would give (``<service>``, ``<pod>.<service>``) in ``hostAliases``;
- a StatefulSet or Deployment becomes its pods (``Pod`` documents), one per replica;
- an ``emptyDir`` volume is a volume of the pod's own, ``<volume>-<pod>`` (podman 4.3 makes one named volume of
  each ``emptyDir`` name, shared by every pod that uses the name, and fails on ``medium`` and ``sizeLimit``); it
  outlives a restart of its pod, which a Kubernetes ``emptyDir`` does not;
- a Secret is handed over as a ConfigMap of the same name (podman 4.3 fails on a ``secret`` volume of a Secret played
  from the same file), with the secrets the test generated in place of the manifest's placeholders;
- readiness and liveness probes are left out (podman turns them into healthchecks run by systemd timers, which
  this machine has not); the test polls the same ``/health`` routes;
- ``$(VAR)`` in a container's command and arguments is expanded here (podman 4.3 leaves it as written), for
  variables with a literal value or the pod's name;
- init containers are kept and run at each start of their pod (as Kubernetes runs them), not run once and removed;
- ``kubectl port-forward`` to nimbus's API is a ``hostPort`` on the host's loopback; the other container ports are
  dropped (podman 4.3 publishes a container port on the host even without a ``hostPort``, and a pod's ports are
  reached at its address anyway);
- NetworkPolicies, PodDisruptionBudgets and the Namespace are not played (nothing here enforces them; the offline
  tests check them).
"""

from __future__ import annotations

import base64
import copy
import ipaddress
from typing import Any

Resource = dict[str, Any]

NOT_PLAYED = {"Service", "NetworkPolicy", "PodDisruptionBudget", "Namespace"}


def _selected(service: Resource, labels: dict[str, str]) -> bool:
    selector = service.get("spec", {}).get("selector", {})
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _expand(container: Resource, pod: str) -> None:
    """Expand ``$(VAR)`` in the container's command and arguments, as Kubernetes does, for its variables with a
    literal value or the pod's name (``fieldRef: metadata.name``)."""
    values: dict[str, str] = {}
    for var in container.get("env", []):
        if "value" in var:
            values[var["name"]] = str(var["value"])
        elif var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name":
            values[var["name"]] = pod
    for key in ("command", "args"):
        if key in container:
            out = []
            for arg in container[key]:
                for var, value in values.items():
                    arg = arg.replace(f"$({var})", value)
                out.append(arg)
            container[key] = out


def playable(resources: list[Resource], images: dict[str, str], secrets: dict[str, str], subnet: str,
             host_ports: dict[tuple[str, int], int]) -> tuple[list[Resource], dict[str, str]]:
    """The documents to play and ``{pod name: address}``.

    ``images`` maps a manifest's image (without its tag) to the image to run; ``secrets`` replaces the text of
    every Secret's ``stringData`` entry; ``subnet`` is the test network's (pods get consecutive addresses from its
    tenth on); ``host_ports`` publishes ``(pod name, container port)`` on the host's loopback at that port.
    """
    services = [r for r in resources if r["kind"] == "Service"]
    network = ipaddress.ip_network(subnet)
    out: list[Resource] = []
    pods: list[tuple[Resource, list[str]]] = []  # each pod and the names it answers to
    for r in resources:
        kind, meta = r["kind"], r["metadata"]
        if kind in NOT_PLAYED:
            continue
        if kind == "ConfigMap":
            out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": meta["name"]},
                        "data": dict(r.get("data", {}))})
        elif kind == "Secret":
            data = {k: base64.b64decode(v).decode() for k, v in r.get("data", {}).items()}
            data.update({k: secrets.get(k, v) for k, v in r.get("stringData", {}).items()})
            out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": meta["name"]}, "data": data})
        elif kind in ("StatefulSet", "Deployment"):
            spec = r["spec"]
            template = spec["template"]
            labels = dict(template["metadata"].get("labels", {}))
            names = [s["metadata"]["name"] for s in services if _selected(s, labels)]
            count = int(spec.get("replicas", 1))
            for ordinal in range(count):
                name = f"{meta['name']}-{ordinal}" if kind == "StatefulSet" else meta["name"]
                pod_spec = copy.deepcopy(template["spec"])
                pod_spec["hostname"] = name
                volumes = pod_spec.setdefault("volumes", [])
                for claim in spec.get("volumeClaimTemplates", []):
                    claim_name = f"{claim['metadata']['name']}-{name}"
                    out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                "metadata": {"name": claim_name}, "spec": copy.deepcopy(claim["spec"])})
                    volumes.append({"name": claim["metadata"]["name"],
                                    "persistentVolumeClaim": {"claimName": claim_name}})
                for volume in volumes:
                    if "secret" in volume:
                        volume["configMap"] = {"name": volume.pop("secret")["secretName"]}
                    if "emptyDir" in volume:  # the pod's own volume, not one named volume shared by every pod
                        del volume["emptyDir"]
                        claim_name = f"{volume['name']}-{name}"
                        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                    "metadata": {"name": claim_name},
                                    "spec": {"accessModes": ["ReadWriteOnce"],
                                             "resources": {"requests": {"storage": "1Gi"}}}})
                        volume["persistentVolumeClaim"] = {"claimName": claim_name}
                for container in [*pod_spec.get("initContainers", []), *pod_spec["containers"]]:
                    _expand(container, name)
                    repository, _, _ = container["image"].partition(":")
                    container["image"] = images.get(repository, container["image"])
                    container.pop("readinessProbe", None)
                    container.pop("livenessProbe", None)
                    ports = []
                    for port in container.get("ports", []):
                        published = host_ports.get((name, int(port["containerPort"])))
                        if published is not None:
                            ports.append({**port, "hostPort": published, "hostIP": "127.0.0.1"})
                    container["ports"] = ports
                # init containers run at every start of the pod, as Kubernetes runs them (podman's default runs
                # them once and removes them)
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "labels": labels,
                                    "annotations": {"io.podman.annotations.init.container.type": "always"}},
                       "spec": pod_spec}
                hostnames = [n for service in names for n in ([f"{name}.{service}", service] if kind == "StatefulSet"
                                                              else [service])]
                pods.append((pod, hostnames))
    addresses = {pod["metadata"]["name"]: str(network.network_address + 10 + i) for i, (pod, _) in enumerate(pods)}
    aliases: dict[str, list[str]] = {}
    for pod, hostnames in pods:
        for hostname in hostnames:
            if all(hostname not in names for names in aliases.values()):  # a Service names its first pod
                aliases.setdefault(addresses[pod["metadata"]["name"]], []).append(hostname)
    for pod, _ in pods:
        pod["spec"]["hostAliases"] = [{"ip": ip, "hostnames": names} for ip, names in sorted(aliases.items())]
        out.append(pod)
    return out, addresses
