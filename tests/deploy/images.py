"""The images the deployment tests run: the bases (the registry's, the caller's, or local ones made from Debian by
scripts/local-images.sh) and the project's image built from the Dockerfile, tagged by a hash of what it is built
from so that an unchanged tree reuses it."""

from __future__ import annotations

import hashlib
import os
import subprocess

from tests.cluster.harness import REPO
from tests.deploy.containers import Engine

#: what the Dockerfile's build reads (besides itself): its image is rebuilt only when one of them changed
BUILD_INPUTS = ("pyproject.toml", "setup.cfg", "setup.py", "README.md", "storm_py")
IMAGE_REPOSITORY = "localhost/storm-py-compose-test"
BASES = ("STORM_PY_BUILD_BASE_IMAGE", "STORM_PY_BASE_IMAGE", "STORM_PY_ZOOKEEPER_IMAGE")
DEFAULT_BASES = ("python:3.11", "python:3.11-slim", "zookeeper:3.8")


def base_images(engine: Engine) -> dict[str, str]:
    """The bases: the caller's (its environment), the registry's where the engine has them, else local ones."""
    if all(os.environ.get(name) for name in BASES):
        return {name: os.environ[name] for name in BASES}
    if all(engine.run("image", "inspect", image, check=False).returncode == 0 for image in DEFAULT_BASES):
        return {}
    made = subprocess.run([str(REPO / "scripts" / "local-images.sh")], capture_output=True, text=True,
                          env={**engine.env, "CONTAINER_ENGINE": engine.command}, timeout=900, check=False)  # fmt: skip
    assert made.returncode == 0, made.stderr[-4000:]
    print(made.stderr, end="")
    values = dict(line.split("=", 1) for line in made.stdout.split())
    assert set(values) == set(BASES), made.stdout
    return values


def image_tag(bases: dict[str, str]) -> str:
    """The project image's tag: a hash of the build's inputs and bases, so that an unchanged tree reuses it."""
    digest = hashlib.sha256(repr(sorted(bases.items())).encode())
    digest.update((REPO / "Dockerfile").read_bytes())
    for name in BUILD_INPUTS:
        root = REPO / name
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".so", ".pyc"):
                digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return f"{IMAGE_REPOSITORY}:{digest.hexdigest()[:16]}"


def image_ids(engine: Engine, *filters: str) -> set[str]:
    args = [a for f in filters for a in ("--filter", f)]
    return set(engine.run("images", "-q", "--no-trunc", *args).stdout.split())


def project_image(engine: Engine, bases: dict[str, str]) -> str:
    """The project's image (built from the Dockerfile on ``bases`` unless an unchanged tree built it already)."""
    image = image_tag(bases)
    if engine.run("image", "inspect", image, check=False).returncode != 0:
        dangling = image_ids(engine, "dangling=true")
        args = [a for name, arg in (("STORM_PY_BUILD_BASE_IMAGE", "BUILD_BASE"), ("STORM_PY_BASE_IMAGE", "BASE"))
                if name in bases for a in ("--build-arg", f"{arg}={bases[name]}")]
        engine.run("build", *args, "-t", image, str(REPO), timeout=1200)
        made = image_ids(engine, "dangling=true") - dangling  # the build stage's image, left untagged
        if made:
            engine.run("rmi", *made, check=False)
    return image


def drop_older_project_images(engine: Engine, keep: str) -> None:
    """Remove the project images of earlier trees: one is kept, for the next run if nothing changed."""
    for old in image_ids(engine, f"reference={IMAGE_REPOSITORY}") - image_ids(engine, f"reference={keep}"):
        engine.run("rmi", "-f", old, check=False)
