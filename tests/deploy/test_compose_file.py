"""docker-compose.yml's variables: each has a default, docs/deploying.md names each, and scripts/local-images.sh
prints exactly the bases the file reads; the Dockerfile takes both its bases as build arguments."""

from __future__ import annotations

import re

from tests.cluster.harness import REPO


def compose_variables() -> dict[str, str]:
    text = (REPO / "docker-compose.yml").read_text(encoding="utf-8")
    uses = re.findall(r"\$\{([A-Z_]+)(:-([^}]*))?\}", text)
    assert all(has_default for _, has_default, _ in uses), "a variable without a default"
    return {name: default for name, _, default in uses}


def test_every_compose_variable_has_a_default_and_is_documented() -> None:
    variables = compose_variables()
    assert {"STORM_PY_BUILD_BASE_IMAGE", "STORM_PY_BASE_IMAGE", "STORM_PY_ZOOKEEPER_IMAGE", "STORM_PY_IMAGE",
            "STORM_PY_CONF_DIR", "STORM_PY_NIMBUS_PORT"} <= set(variables)  # fmt: skip
    assert variables["STORM_PY_ZOOKEEPER_IMAGE"] == "zookeeper:3.8"
    assert variables["STORM_PY_BASE_IMAGE"] == "python:3.11-slim"
    docs = (REPO / "docs" / "deploying.md").read_text(encoding="utf-8")
    for name in variables:
        assert f"`{name}`" in docs, name


def test_local_images_prints_the_bases_the_compose_file_reads() -> None:
    script = (REPO / "scripts" / "local-images.sh").read_text(encoding="utf-8")
    printed = set(re.findall(r'^echo "([A-Z_]+)=', script, flags=re.MULTILINE))
    assert printed == {name for name in compose_variables() if name.endswith("_IMAGE") and name != "STORM_PY_IMAGE"}


def test_the_dockerfile_takes_its_bases_as_build_arguments() -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert re.findall(r"^FROM (\S+)", text, flags=re.MULTILINE) == ["${BUILD_BASE}", "${BASE}"]
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, flags=re.MULTILINE))
    variables = compose_variables()
    assert args == {"BUILD_BASE": variables["STORM_PY_BUILD_BASE_IMAGE"], "BASE": variables["STORM_PY_BASE_IMAGE"]}
    assert '"tini", "--"' in text  # PID 1 passes SIGTERM on and reaps
