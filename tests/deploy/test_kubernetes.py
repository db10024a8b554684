"""deploy/kubernetes: every manifest, and each overlay as rendered, valid against the Kubernetes API schemas
(offline, from the kubernetes-validate package), and the cluster they describe is the one docs/deploying.md
promises: two nimbuses with their blobs on persistent volumes, supervisors whose pods expose one port per slot,
probes on /health, requests and limits everywhere, disruption budgets, and network policies that admit only the
cluster's own traffic and its clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml

from storm_py.cli.main import cli
from storm_py.config import read_storm_config
from tests.cluster.harness import REPO
from tests.deploy.kustomize import load_documents, render

KUBE = REPO / "deploy" / "kubernetes"
VERSION = "1.30"  # the oldest Kubernetes still supported upstream when these manifests were written
OVERLAYS = sorted(p.parent for p in (KUBE / "overlays").glob("*/kustomization.yaml"))


def manifests() -> list[Path]:
    return sorted(p for p in KUBE.rglob("*.yaml") if p.name != "kustomization.yaml")


def by_kind(resources: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["name"]: r for r in resources if r["kind"] == kind}


def pod_spec(resource: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = resource["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("path", manifests(), ids=lambda p: str(p.relative_to(KUBE)))
def test_every_manifest_is_valid_against_the_api_schemas(path: Path) -> None:
    documents = load_documents(path)
    assert documents
    for doc in documents:
        kubernetes_validate.validate(doc, VERSION, strict=True)


@pytest.mark.parametrize("directory", [KUBE / "base", *OVERLAYS], ids=lambda p: str(p.relative_to(KUBE)))
def test_each_kustomization_renders_to_valid_resources(directory: Path) -> None:
    resources = render(directory)
    names = [(r["kind"], r["metadata"]["name"]) for r in resources]
    assert len(names) == len(set(names)), names
    for resource in resources:
        kubernetes_validate.validate(resource, VERSION, strict=True)
        if resource["kind"] != "Namespace":
            assert resource["metadata"]["labels"]["app.kubernetes.io/part-of"] == "storm-py", names


def test_a_broken_manifest_is_refused() -> None:
    nimbus = by_kind(render(KUBE / "base"), "StatefulSet")["storm-py-nimbus"]
    pod_spec(nimbus)["containers"][0]["readinessProbe"]["httpGet"]["port"] = [6627]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(nimbus, VERSION, strict=True)


def test_the_rendering_refuses_a_kustomize_field_it_does_not_apply(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\npatches: [{path: p.yaml}]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="patches"):
        render(tmp_path)


def storm_conf(resources: list[dict[str, Any]], tmp_path: Path) -> dict[str, Any]:
    """What a daemon reads: the ConfigMap's storm.yaml followed by the Secret's keys (the init containers join
    them so)."""
    text = by_kind(resources, "ConfigMap")["storm-py-config"]["data"]["storm.yaml"]
    text += by_kind(resources, "Secret")["storm-py-secrets"]["stringData"]["secrets.yaml"]
    path = tmp_path / "storm.yaml"
    path.write_text(text, encoding="utf-8")
    return dict(read_storm_config(path))


def test_the_cluster_is_nimbus_pair_supervisors_ui_drpc_with_probes_and_limits(tmp_path: Path) -> None:
    resources = render(KUBE / "base")
    conf = storm_conf(resources, tmp_path)
    sets, deployments = by_kind(resources, "StatefulSet"), by_kind(resources, "Deployment")
    services = by_kind(resources, "Service")
    assert set(sets) == {"storm-py-zookeeper", "storm-py-nimbus", "storm-py-supervisor"}
    assert set(deployments) == {"storm-py-ui", "storm-py-drpc"}

    nimbus = sets["storm-py-nimbus"]
    assert nimbus["spec"]["replicas"] == 2
    assert services[nimbus["spec"]["serviceName"]]["spec"]["clusterIP"] == "None"  # stable names for the seeds
    port = conf["nimbus.thrift.port"]
    assert conf["nimbus.seeds"] == [f"storm-py-nimbus-{i}.storm-py-nimbus:{port}" for i in range(2)]
    (claim,) = nimbus["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in pod_spec(nimbus)["containers"][0]["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == conf["storm.local.dir"]  # blobs survive a pod's restart
    assert conf["storm.zookeeper.servers"] == ["storm-py-zookeeper"] and "storm-py-zookeeper" in services

    supervisor = sets["storm-py-supervisor"]
    ports = {p["containerPort"] for p in pod_spec(supervisor)["containers"][0]["ports"]}
    assert ports == {*conf["supervisor.slots.ports"], conf["logviewer.port"]}
    assert {p["port"] for p in services["storm-py-supervisor"]["spec"]["ports"]} == ports
    assert "storm.local.hostname=$(POD_NAME).storm-py-supervisor" in pod_spec(supervisor)["containers"][0]["args"]

    for resource in [*sets.values(), *deployments.values()]:
        spec = pod_spec(resource)
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            limits = container["resources"]
            assert set(limits["requests"]) == set(limits["limits"]) == {"cpu", "memory"}, container["name"]
        for container in spec["containers"]:
            for probe in ("readinessProbe", "livenessProbe"):
                assert probe in container, (resource["metadata"]["name"], probe)
            if resource["metadata"]["name"] != "storm-py-zookeeper":
                assert container["readinessProbe"]["httpGet"]["path"] == "/health"
                assert container["livenessProbe"]["httpGet"]["path"] == "/health"
                exposed = {p["containerPort"] for p in container["ports"]}
                assert container["readinessProbe"]["httpGet"]["port"] in exposed

    budgets = by_kind(resources, "PodDisruptionBudget")
    assert budgets["storm-py-nimbus"]["spec"]["minAvailable"] == 1
    assert budgets["storm-py-supervisor"]["spec"]["maxUnavailable"] == 1


def test_every_daemon_command_is_a_valid_storm_py_invocation_of_the_joined_config() -> None:
    for resource in render(KUBE / "base"):
        if resource["kind"] not in ("StatefulSet", "Deployment"):
            continue
        for container in pod_spec(resource)["containers"]:
            if container["image"].startswith("zookeeper"):
                continue
            args = list(container["args"])
            assert args[:2] == ["--log-level", "INFO"]
            sub_name, *rest = args[2:]
            ctx = click.Context(cli, info_name="storm-py")
            sub = cli.get_command(ctx, sub_name)
            assert sub is not None, sub_name
            sub.make_context(sub_name, list(rest), parent=ctx)
            assert rest[:2] == ["--config", "/secrets/storm.yaml"]
        for init in pod_spec(resource).get("initContainers", []):
            assert "/conf/storm.yaml /cluster-secret/secrets.yaml > /secrets/storm.yaml" in init["command"][-1]
            assert init["command"][-1].startswith("umask 077")  # the joined file holds the secrets


def test_network_policies_admit_only_the_cluster_and_its_clients() -> None:
    policies = by_kind(render(KUBE / "base"), "NetworkPolicy")
    deny = policies["storm-py-deny-ingress"]["spec"]
    assert deny["podSelector"] == {"matchLabels": {"app.kubernetes.io/part-of": "storm-py"}}
    assert deny["policyTypes"] == ["Ingress"] and "ingress" not in deny  # nothing, unless another policy says
    for name, policy in policies.items():
        for rule in policy["spec"].get("ingress", []):
            assert rule.get("from"), name  # never from anywhere
            for peer in rule["from"]:
                assert set(peer) == {"podSelector"}, (name, peer)  # pods of this namespace only, no ipBlock
    clients = policies["storm-py-clients"]["spec"]["ingress"][0]
    assert {p["port"] for p in clients["ports"]} == {6627, 8080, 3772, 3774}


def test_the_dev_overlay_runs_one_nimbus_two_supervisors_in_its_namespace() -> None:
    resources = render(KUBE / "overlays" / "dev")
    sets = by_kind(resources, "StatefulSet")
    assert sets["storm-py-nimbus"]["spec"]["replicas"] == 1
    assert sets["storm-py-supervisor"]["spec"]["replicas"] == 2
    (namespace,) = by_kind(resources, "Namespace")
    assert all(r["metadata"].get("namespace") == namespace for r in resources if r["kind"] != "Namespace")
    images = {c["image"] for r in resources if r["kind"] in ("StatefulSet", "Deployment")
              for c in [*pod_spec(r).get("initContainers", []), *pod_spec(r)["containers"]]}  # fmt: skip
    assert images == {"storm-py:dev", "zookeeper:3.8"}
    assert yaml.safe_load((KUBE / "overlays" / "dev" / "kustomization.yaml").read_text())["namespace"] == namespace
